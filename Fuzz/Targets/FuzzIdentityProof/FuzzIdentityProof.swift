import FuzzSupport
import MeshCore
import MeshCrypto

/// The identity proof in Noise XX messages 2 and 3: the first 32 input bytes are the
/// Noise static key the handshake authenticated, the rest the proof payload. It
/// parses and verifies or throws a MeshError. What parses re-encodes its fixed part
/// byte for byte, and what it understood of the extension area (a valid name) parses
/// back to the same proof.
@main
enum FuzzIdentityProof {
    static func main() { fuzzMain(testOneInput) }
}

func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    guard bytes.count >= 32 else { return 0 }
    let noiseStatic = Array(bytes[0..<32])
    let payload = Array(bytes[32...])
    do {
        let proof = try IdentityProof.parse(payload)
        let encoded = proof.encoded
        fuzzCheck(
            Array(encoded.prefix(IdentityProof.length)) == Array(payload.prefix(IdentityProof.length)),
            "parse + encode changed the proof's fixed part"
        )
        fuzzCheck(try IdentityProof.parse(encoded) == proof, "an encoded proof parses to another proof")
        if let name = proof.name {
            fuzzCheck(PeerNames.validated(Array(name.utf8)) == name, "a name that breaks the rules was taken")
        }
        _ = try proof.verify(noiseStatic: noiseStatic)
    } catch let error as MeshError {
        fuzzCheck(!error.message.isEmpty, "an error without a message")
    } catch {
        fuzzCheck(false, "not a MeshError: \(error)")
    }
    return 0
}
