import FuzzSupport
import MeshCore
import MeshCrypto

/// Sealed envelopes: any bytes are opened by the recipient (`EnvelopeSealer.open`,
/// claiming the genuine sender as origin) and verified as a relay would
/// (`Envelope.verify`); both either succeed or throw a MeshError, and nothing but a
/// genuine envelope opens.
@main
enum FuzzEnvelope {
    static func main() { fuzzMain(testOneInput) }
}

struct Keys: Sendable {
    let alice: NodeIdentity
    let bob: NodeIdentity
    init() {
        do {
            alice = try NodeIdentity(seed: [UInt8](repeating: 1, count: 32))
            bob = try NodeIdentity(seed: [UInt8](repeating: 2, count: 32))
        } catch {
            fatalError("fixed seeds are valid: \(error)")
        }
    }
}

let keys = Keys()

func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    let sealer = EnvelopeSealer(identity: keys.bob)
    do {
        _ = try sealer.open(bytes, from: keys.alice.peerID)
    } catch let error as MeshError {
        fuzzCheck(!error.message.isEmpty, "an error without a message")
    } catch {
        fuzzCheck(false, "open: not a MeshError: \(error)")
    }
    do {
        _ = try Envelope.verify(bytes)
    } catch is MeshError {
    } catch {
        fuzzCheck(false, "verify: not a MeshError: \(error)")
    }
    return 0
}
