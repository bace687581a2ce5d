import FuzzSupport
import MeshCore

/// `PacketReassembler`: the input is a sequence of packets, each a 1-byte length then
/// that many bytes. Every packet either feeds or throws a MeshError; a segment that
/// comes out is never longer than 65,535 bytes.
@main
enum FuzzReassembler {
    static func main() { fuzzMain(testOneInput) }
}

func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    var reassembler = PacketReassembler()
    var index = 0
    while index < bytes.count {
        let length = Int(bytes[index])
        index += 1
        let packet = Array(bytes[index..<min(bytes.count, index + length)])
        index += length
        do {
            if case .segment(let segment) = try reassembler.feed(packet) {
                fuzzCheck(segment.count <= 65_535, "a segment of \(segment.count) bytes")
            }
        } catch {
            fuzzCheck(error.code == .malformedFrame, "unexpected error code \(error.code)")
        }
    }
    return 0
}
