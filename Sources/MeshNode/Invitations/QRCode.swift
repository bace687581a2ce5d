import MeshCore

/// A QR Code symbol (ISO/IEC 18004, Model 2) holding bytes in byte mode: the square of
/// dark and light modules, ready to render (``terminalText(quietZone:colors:)``,
/// ``pgm(scale:quietZone:)``).
///
/// The encoder picks the smallest version (1 to 40) that holds the bytes at the chosen
/// error-correction level, adds the Reed–Solomon codewords block by block, places the
/// interleaved codewords, and applies the mask (of eight) with the lowest penalty score.
///
/// ```swift
/// let code = try QRCode.encode(Array("scmesh:…".utf8), errorCorrection: .medium)
/// print(code.terminalText())
/// ```
public struct QRCode: Sendable, Hashable {
    /// How many codewords may be damaged and still read: about 7 % (`low`), 15 %
    /// (`medium`), 25 % (`quartile`) or 30 % (`high`).
    public enum ErrorCorrection: Int, Sendable, Hashable, CaseIterable {
        /// About 7 % of the codewords can be restored.
        case low
        /// About 15 %.
        case medium
        /// About 25 %.
        case quartile
        /// About 30 %.
        case high

        /// The level's two bits in the format information.
        var formatBits: Int {
            switch self {
            case .low: 1
            case .medium: 0
            case .quartile: 3
            case .high: 2
            }
        }
    }

    /// The version, 1 to 40: the symbol is `17 + 4 × version` modules wide.
    public let version: Int
    /// The error-correction level.
    public let errorCorrection: ErrorCorrection
    /// The mask pattern applied (0 to 7).
    public let mask: Int
    /// Modules per side.
    public var size: Int { 17 + 4 * version }
    /// Row-major: `modules[y * size + x]` is true for a dark module.
    let modules: [Bool]

    /// Whether the module at column `x`, row `y` is dark (false outside the symbol).
    public subscript(x: Int, y: Int) -> Bool {
        guard x >= 0, y >= 0, x < size, y < size else { return false }
        return modules[y * size + x]
    }

    /// The most bytes a symbol of `version` holds in byte mode at `errorCorrection`.
    public static func byteCapacity(version: Int, errorCorrection: ErrorCorrection) -> Int {
        let bits = QRTables.dataCodewords(version: version, errorCorrection: errorCorrection) * 8
        return (bits - 4 - characterCountBits(version: version)) / 8
    }

    /// The byte-mode character count field's width.
    static func characterCountBits(version: Int) -> Int { version <= 9 ? 8 : 16 }

    /// Encodes `bytes` in the smallest symbol (up to `maximumVersion`) that holds them.
    /// - Throws: `MeshError` `.invalidArgument` when they do not fit in a symbol of
    ///   `maximumVersion` at `errorCorrection`.
    public static func encode(
        _ bytes: [UInt8],
        errorCorrection: ErrorCorrection = .medium,
        maximumVersion: Int = 40
    ) throws(MeshError) -> QRCode {
        let limit = min(max(maximumVersion, 1), 40)
        guard
            let version = (1...limit).first(where: {
                byteCapacity(version: $0, errorCorrection: errorCorrection) >= bytes.count
            })
        else {
            throw MeshError(
                .invalidArgument,
                "\(bytes.count) bytes do not fit in a QR code of version \(limit) at error correction \(errorCorrection) (at most \(byteCapacity(version: limit, errorCorrection: errorCorrection)))"
            )
        }
        let codewords = interleavedCodewords(
            dataCodewords(bytes, version: version, errorCorrection: errorCorrection),
            version: version,
            errorCorrection: errorCorrection
        )
        var grid = QRGrid(version: version)
        grid.drawFunctionPatterns()
        grid.placeCodewords(codewords)
        var best: (mask: Int, penalty: Int, grid: QRGrid)?
        for mask in 0..<8 {
            var candidate = grid
            candidate.applyMask(mask)
            candidate.drawFormatBits(errorCorrection: errorCorrection, mask: mask)
            let penalty = candidate.penalty()
            if best == nil || penalty < best!.penalty { best = (mask, penalty, candidate) }
        }
        let chosen = best!
        return QRCode(version: version, errorCorrection: errorCorrection, mask: chosen.mask, modules: chosen.grid.dark)
    }

    /// The data codewords: mode indicator `0100`, the count, the bytes, the terminator,
    /// zero bits to a byte boundary, then the pad bytes `0xEC 0x11` alternately.
    static func dataCodewords(_ bytes: [UInt8], version: Int, errorCorrection: ErrorCorrection) -> [UInt8] {
        let capacity = QRTables.dataCodewords(version: version, errorCorrection: errorCorrection) * 8
        var bits = BitWriter()
        bits.append(0b0100, count: 4)
        bits.append(bytes.count, count: characterCountBits(version: version))
        for byte in bytes { bits.append(Int(byte), count: 8) }
        bits.append(0, count: min(4, capacity - bits.count))
        bits.append(0, count: (8 - bits.count % 8) % 8)
        var padding: UInt8 = 0xEC
        while bits.count < capacity {
            bits.append(Int(padding), count: 8)
            padding = padding == 0xEC ? 0x11 : 0xEC
        }
        return bits.bytes
    }

    /// Splits the data codewords into the version's blocks (the short ones first), adds
    /// each block's Reed–Solomon codewords, and interleaves: the i-th data codeword of
    /// every block in turn, then the i-th error-correction codeword of every block.
    static func interleavedCodewords(_ data: [UInt8], version: Int, errorCorrection: ErrorCorrection) -> [UInt8] {
        let blockCount = QRTables.blocks(version: version, errorCorrection: errorCorrection)
        let eccLength = QRTables.eccCodewordsPerBlock(version: version, errorCorrection: errorCorrection)
        let shortData = data.count / blockCount
        let longBlocks = data.count % blockCount
        let generator = ReedSolomon.generator(degree: eccLength)
        var blocks: [[UInt8]] = []
        var eccBlocks: [[UInt8]] = []
        var start = 0
        for index in 0..<blockCount {
            let length = shortData + (index >= blockCount - longBlocks ? 1 : 0)
            let block = Array(data[start..<start + length])
            start += length
            blocks.append(block)
            eccBlocks.append(ReedSolomon.remainder(block, generator: generator))
        }
        var result: [UInt8] = []
        result.reserveCapacity(data.count + eccLength * blockCount)
        for index in 0...shortData {
            for block in blocks where index < block.count { result.append(block[index]) }
        }
        for index in 0..<eccLength {
            for block in eccBlocks { result.append(block[index]) }
        }
        return result
    }
}

/// Bits appended most significant first, packed into bytes.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, count bitCount: Int) {
        for shift in stride(from: bitCount - 1, through: 0, by: -1) {
            if count % 8 == 0 { bytes.append(0) }
            if (value >> shift) & 1 == 1 { bytes[bytes.count - 1] |= UInt8(0x80 >> (count % 8)) }
            count += 1
        }
    }
}
