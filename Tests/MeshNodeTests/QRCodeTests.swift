import Foundation
import MeshCore
import TestSupport
import Testing

@testable import MeshNode

// The QR encoder, checked against the standard's tables and, for the symbols as a
// whole, against an independent decoder: zbar's `zbarimg` (Debian's zbar-tools,
// installed by scripts/setup.sh --test) reads the PGM images the encoder renders.

@Suite("QR code encoder")
struct QRCodeTests {
    @Test("capacities match ISO/IEC 18004 table 7 (codewords per version, byte capacity per level)")
    func capacities() {
        let totalCodewords = [1: 26, 2: 44, 6: 172, 7: 196, 10: 346, 14: 581, 20: 1085, 27: 1828, 40: 3706]
        for (version, total) in totalCodewords {
            #expect(QRTables.rawDataModules(version: version) / 8 == total, "version \(version)")
        }
        #expect(QRTables.rawDataModules(version: 40) == 29648)
        #expect(QRCode.byteCapacity(version: 1, errorCorrection: .low) == 17)
        #expect(QRCode.byteCapacity(version: 1, errorCorrection: .medium) == 14)
        #expect(QRCode.byteCapacity(version: 1, errorCorrection: .high) == 7)
        #expect(QRCode.byteCapacity(version: 10, errorCorrection: .medium) == 213)
        #expect(QRCode.byteCapacity(version: 15, errorCorrection: .medium) == 412)
        #expect(QRCode.byteCapacity(version: 40, errorCorrection: .low) == 2953)
        #expect(QRCode.byteCapacity(version: 40, errorCorrection: .high) == 1273)
    }

    @Test("alignment pattern centres match the standard's annex E")
    func alignmentPositions() {
        #expect(QRTables.alignmentPositions(version: 1) == [])
        #expect(QRTables.alignmentPositions(version: 2) == [6, 18])
        #expect(QRTables.alignmentPositions(version: 7) == [6, 22, 38])
        #expect(QRTables.alignmentPositions(version: 15) == [6, 26, 48, 70])
        #expect(QRTables.alignmentPositions(version: 32) == [6, 34, 60, 86, 112, 138])
        #expect(QRTables.alignmentPositions(version: 40) == [6, 30, 58, 86, 114, 142, 170])
    }

    @Test("Reed–Solomon codewords of the well-known 1-Q \"HELLO WORLD\" block")
    func reedSolomon() {
        let data: [UInt8] = [32, 91, 11, 120, 209, 114, 220, 77, 67, 64, 236, 17, 236]
        let ecc = ReedSolomon.remainder(data, generator: ReedSolomon.generator(degree: 13))
        #expect(ecc == [168, 72, 22, 82, 217, 54, 156, 0, 46, 15, 180, 122, 16])
    }

    @Test("too much data for the largest version is a clear error")
    func tooLarge() {
        #expect(throws: MeshError.self) { try QRCode.encode([UInt8](repeating: 65, count: 500), maximumVersion: 10) }
        #expect(throws: MeshError.self) {
            try QRCode.encode([UInt8](repeating: 65, count: 3000), errorCorrection: .low)
        }
    }

    /// Payload lengths that land in versions 1, 2, 6, 7, 9/10 (the count field widens),
    /// 14, 20, 27 and 40.
    static let cases: [(length: Int, level: QRCode.ErrorCorrection)] = [
        (1, .medium), (14, .medium), (20, .low), (100, .medium), (130, .low), (154, .medium), (200, .medium),
        (380, .medium), (640, .low), (1200, .medium), (2900, .low), (60, .high), (90, .quartile),
    ]

    @Test("zbarimg decodes what the encoder makes, every mask and versions 1 to 40", arguments: cases.indices)
    func decodesWithZbar(index: Int) async throws {
        let (length, level) = Self.cases[index]
        // Printable ASCII, varied, so every mask's penalty differs.
        var generator = SplitMix(seed: UInt64(length * 31 + level.rawValue))
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_:/.".utf8)
        let payload = (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
        let code = try QRCode.encode(payload, errorCorrection: level)
        #expect(code.size == 17 + 4 * code.version)
        #expect(QRCode.byteCapacity(version: code.version, errorCorrection: level) >= length)
        if code.version > 1 { #expect(QRCode.byteCapacity(version: code.version - 1, errorCorrection: level) < length) }
        let decoded = try await zbarDecode(code.pgm(scale: code.version > 20 ? 3 : 4))
        #expect(decoded == payload, "version \(code.version) \(level), mask \(code.mask)")
    }

    @Test("every one of the eight masks is chosen for some input and each still decodes")
    func everyMaskDecodes() async throws {
        var seen: Set<Int> = []
        var attempt = 0
        while seen.count < 8, attempt < 400 {
            attempt += 1
            let payload = Array("scmesh:mask-\(attempt)".utf8)
            let code = try QRCode.encode(payload)
            guard seen.insert(code.mask).inserted else { continue }
            #expect(try await zbarDecode(code.pgm()) == payload, "mask \(code.mask)")
        }
        #expect(seen.count == 8, "masks chosen: \(seen.sorted())")
    }

    @Test("the terminal rendering reads back as the same modules, with and without colours")
    func terminalRoundTrip() throws {
        let code = try QRCode.encode(Array("scmesh:terminal".utf8))
        for colors in [true, false] {
            let text = code.terminalText(quietZone: 2, colors: colors)
            let rows = QRCode.modules(fromTerminalText: text)
            #expect(rows.count >= code.size + 4)
            for y in 0..<(code.size + 4) {
                for x in 0..<(code.size + 4) {
                    #expect(rows[y][x] == code[x - 2, y - 2], "(\(x), \(y))")
                }
            }
        }
    }
}

/// A small deterministic generator for test data.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Runs zbar's `zbarimg` on a PGM image and returns the bytes of the one symbol it reads.
func zbarDecode(_ image: [UInt8]) async throws -> [UInt8] {
    let zbarimg = "/usr/bin/zbarimg"
    try #require(
        FileManager.default.isExecutableFile(atPath: zbarimg),
        "zbarimg is missing: run scripts/setup.sh --test (installs zbar-tools)"
    )
    let directory = try TemporaryDirectory()
    defer { directory.cleanUp() }
    let file = directory.file("code.pgm")
    try Data(image).write(to: URL(fileURLWithPath: file))
    let result = try await runProcess(zbarimg, ["--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", "-Sbinary", file])
    guard result.status == 0 else {
        throw MeshError(.invalidArgument, "zbarimg read no QR code (status \(result.status)): \(result.standardError)")
    }
    var output = Array(result.output)
    // --raw ends the symbol with a newline.
    if output.last == UInt8(ascii: "\n") { output.removeLast() }
    return output
}

/// Runs a program to completion on a thread of its own (off the cooperative pool).
func runProcess(
    _ path: String,
    _ arguments: [String]
) async throws -> (status: Int32, output: Data, standardError: String) {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(
                with: Result {
                    let result = try ChildProcess.run(
                        executable: path,
                        arguments: arguments,
                        environment: ProcessInfo.processInfo.environment
                    )
                    return (result.status, Data(result.output), String(decoding: result.error, as: UTF8.self))
                }
            )
        }.start()
    }
}

extension QRCodeTests {
    @Test("a 177-character invitation link needs version 9 at level M (docs/PROTOCOL.md C.2)")
    func invitationSize() throws {
        let code = try QRCode.encode([UInt8](repeating: UInt8(ascii: "A"), count: 177), errorCorrection: .medium)
        #expect(code.version == 9)
        #expect(code.size == 53)
    }
}
