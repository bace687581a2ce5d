import Foundation
import FuzzSupport
import MeshCore
import MeshNode

/// Control-socket requests: any line decodes to a command or to a refusal whose text
/// is one of ours (no decoder internals), and a decoded command survives
/// encode + decode.
@main
enum FuzzControlRequest {
    static func main() { fuzzMain(testOneInput) }
}

func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    switch ControlHandler.parse(bytes) {
    case .success(let request):
        let encoded = try? Array(ControlJSON.encoder().encode(request))
        fuzzCheck(encoded != nil, "a decoded request does not encode")
        if case .success(let again) = ControlHandler.parse(encoded ?? []) {
            fuzzCheck(again == request, "a request does not survive encode + decode")
        } else {
            fuzzCheck(false, "an encoded request does not decode")
        }
    case .failure(let message):
        fuzzCheck(
            message.hasPrefix("request ") || message.hasPrefix("unknown request field")
                || message.hasPrefix("unknown cmd "),
            "unexpected refusal text: \(message)"
        )
    }
    return 0
}
