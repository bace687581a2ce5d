import MeshCore

/// The SCMesh payload of Noise XX messages 2 and 3: it binds the sender's Noise static
/// key to its Ed25519 identity. Layout (`docs/PROTOCOL.md, part B`):
///
/// ```
/// offset  size  field
///      0    32  Ed25519 identity public key (= the sender's peer ID)
///     32    64  Ed25519 signature over "SCMesh-noise-static-v1" || Noise static public key
///     96     1  protocol version (1)
///     97     2  capabilities, big-endian (`Capabilities`; unknown bits are ignored)
///     99     …  extensions: entries of type (1 byte), length (2 bytes, big-endian),
///               value; type 1 = the sender's name (UTF-8, 1 to 64 bytes)
/// ```
///
/// A receiver never fails a handshake over the extension area: an unknown type is
/// skipped, an invalid name is ignored, and a truncated entry ends the walk.
package struct IdentityProof: Sendable, Equatable {
    /// The extension types (docs/PROTOCOL.md §B.2.1).
    package enum ExtensionType {
        /// The sender's name (`node.name`), UTF-8.
        package static let name: UInt8 = 1
        /// Further capability bits, when bit `0x8000` is set: reserved, not sent yet.
        package static let moreCapabilities: UInt8 = 2
    }

    /// The domain-separation prefix of the signed message.
    static let context: [UInt8] = Array("SCMesh-noise-static-v1".utf8)
    /// The fixed part's length.
    package static let length = 32 + 64 + 1 + 2

    var identityKey: [UInt8]
    var signature: [UInt8]
    var version: UInt8
    var capabilities: UInt16
    /// The sender's name (extension type 1); nil sends none. Encoded as given: set it
    /// from ``PeerNames/announceable(_:)``.
    package var name: String?

    /// The proof `identity` makes for `noiseStatic`.
    init(identity: NodeIdentity, noiseStatic: [UInt8], version: UInt8 = Frame.version, capabilities: UInt16 = 0) {
        identityKey = identity.publicKey
        signature = identity.sign(Self.context + noiseStatic)
        self.version = version
        self.capabilities = capabilities
    }

    init(identityKey: [UInt8], signature: [UInt8], version: UInt8, capabilities: UInt16, name: String? = nil) {
        self.identityKey = identityKey
        self.signature = signature
        self.version = version
        self.capabilities = capabilities
        self.name = name
    }

    package var encoded: [UInt8] {
        var bytes = identityKey + signature + [version, UInt8(capabilities >> 8), UInt8(capabilities & 0xFF)]
        if let name {
            bytes += Self.extensionEntry(type: ExtensionType.name, value: Array(name.utf8))
        }
        return bytes
    }

    /// One entry of the extension area: type, length (big-endian), value.
    package static func extensionEntry(type: UInt8, value: [UInt8]) -> [UInt8] {
        precondition(value.count <= Int(UInt16.max), "an extension value has at most 65,535 bytes")
        return [type, UInt8(value.count >> 8), UInt8(value.count & 0xFF)] + value
    }

    /// The extension area's entries as (type, value), in order, up to the first one
    /// that does not fit in what is left (it and everything after are ignored).
    static func extensionEntries(_ area: ArraySlice<UInt8>) -> [(type: UInt8, value: ArraySlice<UInt8>)] {
        var entries: [(type: UInt8, value: ArraySlice<UInt8>)] = []
        var index = area.startIndex
        while area.endIndex - index >= 3 {
            let length = Int(area[index + 1]) << 8 | Int(area[index + 2])
            let start = index + 3
            guard area.endIndex - start >= length else { break }
            entries.append((area[index], area[start..<start + length]))
            index = start + length
        }
        return entries
    }

    /// Parses a payload (never traps).
    /// - Throws: `.malformedIdentityProof` when it is shorter than the fixed part.
    package static func parse(_ payload: [UInt8]) throws -> IdentityProof {
        guard payload.count >= length else {
            throw MeshError(
                .malformedIdentityProof,
                "the handshake payload has \(payload.count) bytes; an SCMesh identity proof needs at least \(length)"
            )
        }
        // The first entry of type 1 decides the name; an invalid one counts as none.
        let nameEntry = extensionEntries(payload[length...]).first { $0.type == ExtensionType.name }
        return IdentityProof(
            identityKey: Array(payload[0..<32]),
            signature: Array(payload[32..<96]),
            version: payload[96],
            capabilities: UInt16(payload[97]) << 8 | UInt16(payload[98]),
            name: nameEntry.flatMap { PeerNames.validated($0.value) }
        )
    }

    /// Checks the proof against the Noise static key the handshake authenticated and
    /// returns the proven peer ID.
    /// - Throws: `.malformedIdentityProof` for another protocol version,
    ///   `.badSignature` when the signature does not bind `noiseStatic` to the key.
    package func verify(noiseStatic: [UInt8], address: String = "the remote end") throws -> PeerID {
        guard version == Frame.version else {
            throw MeshError(.malformedIdentityProof, Capabilities.versionMismatch(remote: version, at: address))
        }
        let peer = try PeerID(bytes: identityKey)
        guard Sodium.ed25519Verify(signature: signature, message: Self.context + noiseStatic, publicKey: identityKey)
        else {
            throw MeshError(
                .badSignature,
                "the identity proof of \(peer.short) does not sign this handshake's Noise static key: an impostor or a corrupted handshake"
            )
        }
        return peer
    }
}
