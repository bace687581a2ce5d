/// The module grid of a QR symbol being built: which modules are dark, and which
/// belong to function patterns (finders, timing, alignment, format and version
/// information), which data and masks leave alone. Coordinates are (x = column, y = row).
struct QRGrid {
    let version: Int
    let size: Int
    var dark: [Bool]
    var isFunction: [Bool]

    init(version: Int) {
        self.version = version
        size = 17 + 4 * version
        dark = [Bool](repeating: false, count: size * size)
        isFunction = [Bool](repeating: false, count: size * size)
    }

    subscript(x: Int, y: Int) -> Bool {
        dark[y * size + x]
    }

    mutating func setFunction(_ x: Int, _ y: Int, _ value: Bool) {
        dark[y * size + x] = value
        isFunction[y * size + x] = true
    }

    // MARK: Function patterns

    /// Finders and separators, timing patterns, alignment patterns, and the areas of the
    /// format information (drawn for real per mask) and version information.
    mutating func drawFunctionPatterns() {
        for index in 0..<size {
            setFunction(6, index, index % 2 == 0)
            setFunction(index, 6, index % 2 == 0)
        }
        drawFinder(centreX: 3, centreY: 3)
        drawFinder(centreX: size - 4, centreY: 3)
        drawFinder(centreX: 3, centreY: size - 4)
        let positions = QRTables.alignmentPositions(version: version)
        let last = positions.count - 1
        for (i, x) in positions.enumerated() {
            for (j, y) in positions.enumerated() {
                // Not where a finder is.
                if (i == 0 && j == 0) || (i == 0 && j == last) || (i == last && j == 0) { continue }
                drawAlignment(centreX: x, centreY: y)
            }
        }
        // Reserve the format areas (the dark module included) until a mask is chosen.
        drawFormatBits(errorCorrection: .medium, mask: 0)
        drawVersionBits()
    }

    /// A 7×7 finder with its light separator, clipped at the symbol's edge.
    private mutating func drawFinder(centreX: Int, centreY: Int) {
        for dy in -4...4 {
            for dx in -4...4 {
                let x = centreX + dx
                let y = centreY + dy
                guard x >= 0, y >= 0, x < size, y < size else { continue }
                let distance = max(abs(dx), abs(dy))
                setFunction(x, y, distance != 2 && distance != 4)
            }
        }
    }

    /// A 5×5 alignment pattern.
    private mutating func drawAlignment(centreX: Int, centreY: Int) {
        for dy in -2...2 {
            for dx in -2...2 {
                setFunction(centreX + dx, centreY + dy, max(abs(dx), abs(dy)) != 1)
            }
        }
    }

    /// The 15 format bits (level, mask, BCH(15,5) check, XOR 0x5412), twice, and the
    /// dark module.
    mutating func drawFormatBits(errorCorrection: QRCode.ErrorCorrection, mask: Int) {
        let data = errorCorrection.formatBits << 3 | mask
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        let bits = (data << 10 | remainder) ^ 0x5412
        func bit(_ index: Int) -> Bool { (bits >> index) & 1 == 1 }
        // Around the top-left finder.
        for index in 0...5 { setFunction(8, index, bit(index)) }
        setFunction(8, 7, bit(6))
        setFunction(8, 8, bit(7))
        setFunction(7, 8, bit(8))
        for index in 9..<15 { setFunction(14 - index, 8, bit(index)) }
        // Split between the top-right and bottom-left finders.
        for index in 0..<8 { setFunction(size - 1 - index, 8, bit(index)) }
        for index in 8..<15 { setFunction(8, size - 15 + index, bit(index)) }
        setFunction(8, size - 8, true)
    }

    /// The 18 version bits (version, BCH(18,6) check) in the two 6×3 blocks, from
    /// version 7 on.
    private mutating func drawVersionBits() {
        guard version >= 7 else { return }
        var remainder = version
        for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
        let bits = version << 12 | remainder
        for index in 0..<18 {
            let value = (bits >> index) & 1 == 1
            let a = size - 11 + index % 3
            let b = index / 3
            setFunction(a, b, value)
            setFunction(b, a, value)
        }
    }

    // MARK: Data

    /// Places the codewords' bits, most significant first, in the two-column zigzag
    /// from the bottom-right corner (up, then down, ...), skipping the vertical timing
    /// column and every function module. Remainder modules stay light.
    mutating func placeCodewords(_ codewords: [UInt8]) {
        let totalBits = codewords.count * 8
        var index = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            let upward = ((right + 1) & 2) == 0
            for step in 0..<size {
                let y = upward ? size - 1 - step : step
                for offset in 0..<2 {
                    let x = right - offset
                    guard !isFunction[y * size + x] else { continue }
                    if index < totalBits {
                        dark[y * size + x] = (codewords[index >> 3] >> (7 - (index & 7))) & 1 == 1
                        index += 1
                    }
                }
            }
            right -= 2
        }
    }

    /// Inverts every non-function module where mask `mask`'s condition holds.
    mutating func applyMask(_ mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] {
                let invert: Bool
                switch mask {
                case 0: invert = (x + y) % 2 == 0
                case 1: invert = y % 2 == 0
                case 2: invert = x % 3 == 0
                case 3: invert = (x + y) % 3 == 0
                case 4: invert = (y / 2 + x / 3) % 2 == 0
                case 5: invert = (x * y) % 2 + (x * y) % 3 == 0
                case 6: invert = ((x * y) % 2 + (x * y) % 3) % 2 == 0
                default: invert = ((x + y) % 2 + (x * y) % 3) % 2 == 0
                }
                if invert { dark[y * size + x].toggle() }
            }
        }
    }

    // MARK: Penalty

    /// The mask penalty score of ISO/IEC 18004 §7.8.3: runs of five or more modules of
    /// one colour (N1 = 3, +1 per extra module), 2×2 blocks of one colour (N2 = 3),
    /// finder-like 1:1:3:1:1 patterns with four light modules on one side (N3 = 40,
    /// the outside of the symbol counting as light), and the dark share's distance
    /// from 50 % (N4 = 10 per 5 %).
    func penalty() -> Int {
        var score = 0
        for line in 0..<size {
            let row = (0..<size).map { self[$0, line] }
            let column = (0..<size).map { self[line, $0] }
            score += Self.runPenalty(row) + Self.finderPenalty(row)
            score += Self.runPenalty(column) + Self.finderPenalty(column)
        }
        for y in 0..<(size - 1) {
            for x in 0..<(size - 1) {
                let colour = self[x, y]
                if self[x + 1, y] == colour, self[x, y + 1] == colour, self[x + 1, y + 1] == colour { score += 3 }
            }
        }
        let darkCount = dark.count(where: { $0 })
        let total = size * size
        let deviation = abs(darkCount * 100 - total * 50)
        score += (deviation / (total * 5)) * 10
        return score
    }

    private static func runPenalty(_ line: [Bool]) -> Int {
        var score = 0
        var run = 1
        for index in 1...line.count {
            if index < line.count, line[index] == line[index - 1] {
                run += 1
            } else {
                if run >= 5 { score += 3 + (run - 5) }
                run = 1
            }
        }
        return score
    }

    private static let finderLike: [Bool] = [true, false, true, true, true, false, true]

    private static func finderPenalty(_ line: [Bool]) -> Int {
        // Four light modules of margin on each side: the quiet zone is light.
        let padded = [Bool](repeating: false, count: 4) + line + [Bool](repeating: false, count: 4)
        var score = 0
        for start in 0...(padded.count - 7) where Array(padded[start..<start + 7]) == finderLike {
            let before = start >= 4 && !padded[(start - 4)..<start].contains(true)
            let after = start + 11 <= padded.count && !padded[(start + 7)..<(start + 11)].contains(true)
            if before || after { score += 40 }
        }
        return score
    }
}
