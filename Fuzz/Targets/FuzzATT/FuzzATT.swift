import FuzzSupport
import TransportBLE

/// The ATT PDU decoder and the GATT server behind the BLE transport's ATT channel: any
/// bytes either decode or throw; whatever decodes re-encodes to the same bytes; the
/// server answers any bytes without trapping, and every answer it gives decodes.
@main
enum FuzzATT {
    static func main() { fuzzMain(testOneInput) }
}

func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    _ = ATTPDU.kind(of: bytes.first ?? 0)
    if let pdu = try? ATTPDU(decoding: bytes) {
        fuzzCheck(pdu.encoded() == bytes, "a decoded PDU does not re-encode to its bytes: \(pdu)")
    }
    var server = GATTServer(identity: Array(0..<12))
    // The MTU exchange first when the input starts with one, then the PDU again at that MTU.
    for _ in 0..<2 {
        let (response, _) = server.handle(bytes)
        if let response {
            fuzzCheck(
                (try? ATTPDU(decoding: response)) != nil,
                "the server's answer \(response) to \(bytes) does not decode"
            )
            fuzzCheck(
                response.count <= server.mtu,
                "the server's answer of \(response.count) bytes exceeds the ATT MTU \(server.mtu)"
            )
        }
    }
    return 0
}
