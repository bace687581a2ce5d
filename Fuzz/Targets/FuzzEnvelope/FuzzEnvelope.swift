import FuzzSupport
import MeshCore
import MeshCrypto

/// Sealed envelopes, formats 1 and 2: any bytes are opened by the recipient
/// (`EnvelopeSealer.open`, claiming the genuine sender as origin, with and without a
/// frame binding: the one the input claims and a fixed one) and verified as a relay
/// would (`Envelope.verify`, `EnvelopeSealer.verify`); each either succeeds or throws a
/// MeshError, and a bound envelope opens only for the frame it binds.
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
    let sealer = EnvelopeSealer(identity: keys.bob, now: { 1_800_000_000_000 })
    let claimed = (try? Envelope.binding(of: bytes))?.binding
    let fixed = SealBinding(messageID: MessageID(high: 1, low: 2), flags: DataFrame.emergencyFlag)
    for binding in [claimed, fixed].compactMap({ $0 }) {
        do {
            _ = try sealer.open(bytes, from: keys.alice.peerID, binding: binding)
            fuzzCheck(claimed?.admits(binding) == true, "a bound envelope opened for a frame it does not bind")
        } catch let error as MeshError {
            fuzzCheck(!error.message.isEmpty, "an error without a message")
        } catch {
            fuzzCheck(false, "open(binding:): not a MeshError: \(error)")
        }
        do {
            try sealer.verify(bytes, from: keys.alice.peerID, binding: binding)
        } catch is MeshError {
        } catch {
            fuzzCheck(false, "verify(binding:): not a MeshError: \(error)")
        }
    }
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
