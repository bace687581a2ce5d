import FuzzSupport
import MeshCore

/// `Frame.decodeInbound`: any bytes either decode, are an unassigned type (ignored by a
/// receiver), or throw a MeshError; whatever decodes re-encodes to a frame that decodes
/// to the same value, and `Frame.decode` agrees on everything but the unassigned types.
@main
enum FuzzFrame {
    static func main() { fuzzMain(testOneInput) }
}

func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    let inbound: Frame?
    do {
        inbound = try Frame.decodeInbound(bytes, maxMessageLength: 1 << 24)
    } catch {
        fuzzCheck(
            (try? Frame.decode(bytes, maxMessageLength: 1 << 24)) == nil,
            "decodeInbound refused what decode accepts"
        )
        return 0
    }
    guard let frame = inbound else {
        fuzzCheck(bytes.count >= 4 && Frame.Kind(rawValue: bytes[1]) == nil, "a known type was ignored as unassigned")
        return 0
    }
    let again = try? Frame.decode(frame.encoded(), maxMessageLength: 1 << 24)
    fuzzCheck(again == frame, "a decoded frame does not survive encode + decode: \(frame)")
    return 0
}
