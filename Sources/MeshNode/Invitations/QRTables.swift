/// The capacity tables of ISO/IEC 18004 (table 9), by version and error-correction
/// level, and what follows from them.
enum QRTables {
    /// Error-correction codewords per block; index 0 unused.
    static let eccCodewordsPerBlock: [[Int]] = [
        // low
        [
            0, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28,
            30, 30, 30,
            30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
        // medium
        [
            0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28,
            28, 28, 28,
            28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28,
        ],
        // quartile
        [
            0, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28,
            30, 30, 30,
            30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
        // high
        [
            0, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30,
            30, 30, 30,
            30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
    ]

    /// Error-correction blocks; index 0 unused.
    static let blockCounts: [[Int]] = [
        [
            0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17,
            18, 19,
            19, 20, 21, 22, 24, 25,
        ],
        [
            0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29,
            31, 33,
            35, 37, 38, 40, 43, 45, 47, 49,
        ],
        [
            0, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35, 38,
            40, 43,
            45, 48, 51, 53, 56, 59, 62, 65, 68,
        ],
        [
            0, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42, 45,
            48, 51,
            54, 57, 60, 63, 66, 70, 74, 77, 81,
        ],
    ]

    static func eccCodewordsPerBlock(version: Int, errorCorrection: QRCode.ErrorCorrection) -> Int {
        eccCodewordsPerBlock[errorCorrection.rawValue][version]
    }

    static func blocks(version: Int, errorCorrection: QRCode.ErrorCorrection) -> Int {
        blockCounts[errorCorrection.rawValue][version]
    }

    /// Modules left for codewords (and remainder bits) once the function patterns,
    /// format and version information are placed.
    static func rawDataModules(version: Int) -> Int {
        let size = 17 + 4 * version
        var modules = size * size
        modules -= 3 * 64  // finder patterns with their separators
        modules -= 2 * (size - 16)  // timing patterns
        modules -= 31  // format information (2 × 15) and the dark module
        if version >= 2 {
            let perSide = version / 7 + 2
            let alignments = perSide * perSide - 3
            modules -= alignments * 25
            // Alignment patterns on the timing lines overlap them by 5 modules each.
            modules += 2 * (perSide - 2) * 5
        }
        if version >= 7 { modules -= 36 }  // version information (2 × 18)
        return modules
    }

    /// Data codewords of a symbol (total codewords less the error-correction ones).
    static func dataCodewords(version: Int, errorCorrection: QRCode.ErrorCorrection) -> Int {
        rawDataModules(version: version) / 8
            - eccCodewordsPerBlock(version: version, errorCorrection: errorCorrection)
            * blocks(version: version, errorCorrection: errorCorrection)
    }

    /// The centre coordinates of the alignment patterns along each axis (empty for
    /// version 1): 6, then evenly spaced (an even step) up to `size - 7`.
    static func alignmentPositions(version: Int) -> [Int] {
        guard version > 1 else { return [] }
        let count = version / 7 + 2
        let size = 17 + 4 * version
        let step = version == 32 ? 26 : (version * 4 + count * 2 + 1) / (count * 2 - 2) * 2
        var positions = [6]
        for index in stride(from: count - 2, through: 0, by: -1) { positions.append(size - 7 - index * step) }
        return positions
    }
}

/// Reed–Solomon error correction over GF(2⁸) with the QR polynomial x⁸+x⁴+x³+x²+1.
enum ReedSolomon {
    /// Powers of α = 2, twice over so products need no modulo.
    static let exp: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 512)
        var value = 1
        for index in 0..<255 {
            table[index] = UInt8(value)
            value <<= 1
            if value & 0x100 != 0 { value ^= 0x11D }
        }
        for index in 255..<512 { table[index] = table[index - 255] }
        return table
    }()

    /// Discrete logarithms (log[0] unused).
    static let log: [Int] = {
        var table = [Int](repeating: 0, count: 256)
        for index in 0..<255 { table[Int(exp[index])] = index }
        return table
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        a == 0 || b == 0 ? 0 : exp[log[Int(a)] + log[Int(b)]]
    }

    /// The generator polynomial (x − α⁰)(x − α¹)…(x − α^(degree−1)), coefficients from
    /// the highest power down, the leading 1 left out.
    static func generator(degree: Int) -> [UInt8] {
        var coefficients: [UInt8] = [1]
        for power in 0..<degree {
            var next = [UInt8](repeating: 0, count: coefficients.count + 1)
            for (index, coefficient) in coefficients.enumerated() {
                next[index] ^= coefficient
                next[index + 1] ^= multiply(coefficient, exp[power])
            }
            coefficients = next
        }
        return Array(coefficients.dropFirst())
    }

    /// The remainder of `data` · x^degree divided by the generator: the block's
    /// error-correction codewords.
    static func remainder(_ data: [UInt8], generator: [UInt8]) -> [UInt8] {
        var remainder = [UInt8](repeating: 0, count: generator.count)
        for byte in data {
            let factor = byte ^ remainder[0]
            remainder.removeFirst()
            remainder.append(0)
            for index in 0..<generator.count { remainder[index] ^= multiply(generator[index], factor) }
        }
        return remainder
    }
}
