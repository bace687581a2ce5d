import FuzzSupport
import MeshCore

/// `Frame.decode`: any bytes either decode or throw a MeshError; whatever decodes
/// re-encodes to a frame that decodes to the same value.
@main
enum FuzzFrame {
    static func main() { fuzzMain(testOneInput) }
}

func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    guard let frame = try? Frame.decode(bytes, maxMessageLength: 1 << 24) else { return 0 }
    let again = try? Frame.decode(frame.encoded(), maxMessageLength: 1 << 24)
    fuzzCheck(again == frame, "a decoded frame does not survive encode + decode: \(frame)")
    return 0
}
