import Foundation
import MeshCore
import TestSupport
import Testing

@testable import MeshCrypto

#if canImport(Glibc)
import Glibc
#endif

/// Ed25519 identities and their key file.
@Suite("Node identity")
struct NodeIdentityTests {
    /// A path that does not exist yet, inside a fresh temporary directory removed afterwards.
    static func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
        let parent = try TemporaryDirectory(prefix: "scmesh-identity")
        defer { parent.cleanUp() }
        try body(parent.file("data"))
    }

    static func mode(of path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }

    @Test("RFC 8032 test 1: seed gives the published key and signature")
    func rfc8032() throws {
        let identity = try NodeIdentity(seed: hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
        #expect(identity.publicKeyHex == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        #expect(identity.peerID.bytes == identity.publicKey, "the peer ID is the Ed25519 public key")
        #expect(identity.peerID.hex == identity.publicKeyHex)
        #expect(identity.peerID.short.count == 8)
        #expect(
            Hex.encode(identity.sign([]))
                == "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        )
    }

    @Test("signatures verify for the signer and message only")
    func signVerify() throws {
        let alice = NodeIdentity.generate()
        let bob = NodeIdentity.generate()
        #expect(alice.peerID != bob.peerID)
        let message = Array("hello".utf8)
        let signature = alice.sign(message)
        #expect(NodeIdentity.verify(signature: signature, message: message, signer: alice.peerID))
        #expect(!NodeIdentity.verify(signature: signature, message: message, signer: bob.peerID))
        #expect(!NodeIdentity.verify(signature: signature, message: Array("hellO".utf8), signer: alice.peerID))
        #expect(!NodeIdentity.verify(signature: Array(signature.dropLast()), message: message, signer: alice.peerID))
        #expect(throws: MeshError.self) { try NodeIdentity(seed: [1, 2, 3]) }
    }

    @Test("the X25519 key converted from the secret key is the one converted from the peer ID")
    func x25519Conversion() throws {
        for _ in 0..<8 {
            let identity = NodeIdentity.generate()
            #expect(identity.x25519KeyPair.publicKey == Sodium.ed25519PublicKeyToX25519(identity.publicKey))
        }
    }

    @Test("first run creates identity.key with mode 0600; later runs load the same identity")
    func createThenLoad() throws {
        try Self.withTemporaryDirectory { directory in
            let nested = directory + "/data/node"
            let created = try NodeIdentity.loadOrCreate(directory: nested)
            let file = nested + "/" + NodeIdentity.fileName
            #expect(try Self.mode(of: file) == 0o600)
            #expect(try Self.mode(of: nested) == 0o700)
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)).count == IdentityFile.length)
            let loaded = try NodeIdentity.loadOrCreate(directory: nested)
            #expect(loaded.peerID == created.peerID)
            let message = Array("same key".utf8)
            #expect(NodeIdentity.verify(signature: loaded.sign(message), message: message, signer: created.peerID))
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: nested).filter { $0.hasSuffix(".tmp") }
            #expect(leftovers.isEmpty)
        }
    }

    @Test("a group- or world-readable key file is refused with a chmod hint", arguments: [0o644, 0o640, 0o604, 0o660])
    func insecureFile(mode: Int) throws {
        try Self.withTemporaryDirectory { directory in
            _ = try NodeIdentity.loadOrCreate(directory: directory)
            let file = directory + "/" + NodeIdentity.fileName
            #expect(chmod(file, mode_t(mode)) == 0)
            let error = #expect(throws: MeshError.self) { try NodeIdentity.loadOrCreate(directory: directory) }
            #expect(error?.code == .identityFileInsecure)
            #expect(error?.message.contains("chmod 600") == true)
        }
    }

    @Test("a corrupt key file is refused and left in place")
    func corruptFile() throws {
        let valid = IdentityFile(directory: "/x").encode(NodeIdentity.generate())
        var mismatched = valid
        mismatched[40] ^= 0x01
        var badVersion = valid
        badVersion[4] = 9
        let corruptions: [[UInt8]] = [
            [], Array(valid.dropLast()), valid + [0], Array("not a key".utf8), mismatched, badVersion,
            [UInt8](repeating: 0, count: IdentityFile.length),
        ]
        for contents in corruptions {
            try Self.withTemporaryDirectory { directory in
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                let file = directory + "/" + NodeIdentity.fileName
                #expect(
                    FileManager.default.createFile(
                        atPath: file,
                        contents: Data(contents),
                        attributes: [.posixPermissions: 0o600]
                    )
                )
                let error = #expect(throws: MeshError.self) { try NodeIdentity.loadOrCreate(directory: directory) }
                #expect(error?.code == .identityFileCorrupt)
                #expect(error?.message.contains("move it away") == true)
                #expect(
                    try Data(contentsOf: URL(fileURLWithPath: file)) == Data(contents),
                    "the file must not be overwritten"
                )
            }
        }
    }

    @Test("an unusable data directory gives an I/O error that names the path")
    func unusableDirectory() throws {
        try Self.withTemporaryDirectory { directory in
            #expect(FileManager.default.createFile(atPath: directory, contents: Data([1])))
            let error = #expect(throws: MeshError.self) { try NodeIdentity.loadOrCreate(directory: directory + "/sub") }
            #expect(error?.code == .identityFileIO)
            #expect(error?.message.contains(directory) == true)
        }
    }
}
