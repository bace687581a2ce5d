import FuzzSupport
import MeshCore
import MeshCrypto

/// The Noise XX link handshake: the first input byte picks which message (1, 2 or 3)
/// the rest replaces, read by a handshake in the state just before that message of
/// one genuine handshake. Any input is read or refused with a MeshError.
@main
enum FuzzHandshake {
    static func main() { fuzzMain(testOneInput) }
}

struct Readers: Sendable {
    var beforeMessage1: LinkHandshake
    var beforeMessage2: LinkHandshake
    var beforeMessage3: LinkHandshake
    var originals: [[UInt8]]

    init() {
        do {
            let context = HandshakeContext(transportName: "fuzz", remoteAddress: "fuzz")
            let alice = NoiseLinkSecurity(identity: .generate())
            let bob = NoiseLinkSecurity(identity: .generate())
            var initiator = try LinkHandshake(security: alice, role: .initiator, context: context)
            var responder = try LinkHandshake(security: bob, role: .responder, context: context)
            let message1 = try initiator.start()!
            _ = try responder.start()
            beforeMessage1 = responder
            let message2 = try responder.receive(message1)!
            beforeMessage2 = initiator
            beforeMessage3 = responder
            let message3 = try initiator.receive(message2)!
            originals = [message1, message2, message3]
        } catch {
            fatalError("the genuine handshake failed: \(error)")
        }
    }
}

let readers = Readers()

func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    guard let selector = bytes.first else { return 0 }
    let message = Array(bytes.dropFirst())
    var reader = [readers.beforeMessage1, readers.beforeMessage2, readers.beforeMessage3][Int(selector % 3)]
    do {
        _ = try reader.receive(message)
    } catch let error as MeshError {
        fuzzCheck(error.code == .handshakeFailed, "unexpected error code \(error.code)")
    } catch {
        fuzzCheck(false, "not a MeshError: \(error)")
    }
    return 0
}
