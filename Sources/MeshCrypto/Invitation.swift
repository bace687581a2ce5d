import MeshCore

/// A signed invitation to connect to a node: its peer ID, display name, the addresses
/// it listens on, and an expiry time, signed with the node's Ed25519 identity key. It
/// travels as a short text link, `scmesh:` followed by the base64url form of its
/// compact binary encoding (docs/PROTOCOL.md, part C), and fits in a QR code.
///
/// ```swift
/// let invitation = try Invitation.signed(by: identity, name: "alice",
///     addresses: [.init(transport: "tcp", address: "192.0.2.7:7420")], expiresAt: now + 86_400)
/// let link = invitation.link                       // "scmesh:AQ…"
/// let parsed = try Invitation(link: link)           // structure only
/// try parsed.verify(now: now)                      // signature and expiry
/// ```
public struct Invitation: Sendable, Hashable {
    /// One address to dial, in the notation of a transport kind (`tcp`:
    /// `"a.b.c.d:port"` or `"[v6]:port"`).
    public struct Address: Sendable, Hashable {
        /// The transport kind that dials it (1 to 16 bytes of ASCII), e.g. `tcp`.
        public var transport: String
        /// The address (1 to 64 bytes of ASCII).
        public var address: String

        /// Creates an address.
        public init(transport: String, address: String) {
            self.transport = transport
            self.address = address
        }
    }

    /// The encoding's version byte.
    public static let version: UInt8 = 1
    /// The text form's prefix.
    public static let linkPrefix = "scmesh:"
    /// What the signature covers before the encoded fields (domain separation from
    /// every other signature made with the identity key).
    public static let signatureContext = Array("scmesh-invite-v1".utf8)
    /// Longest display name, in UTF-8 bytes.
    public static let maximumNameBytes = 64
    /// Most addresses.
    public static let maximumAddresses = 8
    /// Longest transport kind and address, in bytes.
    public static let maximumTransportBytes = 16
    /// Longest address, in bytes.
    public static let maximumAddressBytes = 64

    /// The inviting node (its Ed25519 public key).
    public var peerID: PeerID
    /// Its display name (`node.name`), if it has one.
    public var name: String?
    /// Where it listens.
    public var addresses: [Address]
    /// When the invitation stops being valid, in seconds since 1970-01-01 UTC.
    public var expiresAt: UInt32
    /// The Ed25519 signature by ``peerID`` (64 bytes) over ``signatureContext`` and
    /// the fields.
    public var signature: [UInt8]

    /// Makes and signs an invitation.
    /// - Throws: `MeshError` `.invalidArgument` when the name or an address breaks the
    ///   format's limits (too long, not ASCII, too many addresses).
    public static func signed(
        by identity: NodeIdentity,
        name: String?,
        addresses: [Address],
        expiresAt: UInt32
    ) throws(MeshError) -> Invitation {
        var invitation = Invitation(
            peerID: identity.peerID,
            name: name,
            addresses: addresses,
            expiresAt: expiresAt,
            signature: []
        )
        let fields = try invitation.encodedFields()
        invitation.signature = identity.sign(signatureContext + fields)
        return invitation
    }

    private init(peerID: PeerID, name: String?, addresses: [Address], expiresAt: UInt32, signature: [UInt8]) {
        self.peerID = peerID
        self.name = name
        self.addresses = addresses
        self.expiresAt = expiresAt
        self.signature = signature
    }

    /// The binary encoding: the fields, then the signature.
    public func encoded() throws(MeshError) -> [UInt8] {
        try encodedFields() + signature
    }

    /// The text link: `scmesh:` + base64url (no padding) of ``encoded()``.
    public var link: String {
        // A signed invitation's fields were checked when it was made or parsed.
        Self.linkPrefix + Base64URL.encode((try? encoded()) ?? [])
    }

    /// The signed part: version, peer ID, expiry, name, addresses.
    func encodedFields() throws(MeshError) -> [UInt8] {
        var bytes: [UInt8] = [Self.version]
        bytes += peerID.bytes
        bytes += [
            UInt8(expiresAt >> 24 & 0xFF), UInt8(expiresAt >> 16 & 0xFF), UInt8(expiresAt >> 8 & 0xFF),
            UInt8(expiresAt & 0xFF),
        ]
        let nameBytes = Array((name ?? "").utf8)
        guard nameBytes.count <= Self.maximumNameBytes else {
            throw MeshError(
                .invalidArgument,
                "an invitation's name has at most \(Self.maximumNameBytes) UTF-8 bytes, got \(nameBytes.count)"
            )
        }
        bytes.append(UInt8(nameBytes.count))
        bytes += nameBytes
        guard addresses.count <= Self.maximumAddresses else {
            throw MeshError(
                .invalidArgument,
                "an invitation has at most \(Self.maximumAddresses) addresses, got \(addresses.count)"
            )
        }
        bytes.append(UInt8(addresses.count))
        for entry in addresses {
            for (field, text, limit) in [
                ("transport", entry.transport, Self.maximumTransportBytes),
                ("address", entry.address, Self.maximumAddressBytes),
            ] {
                let utf8 = Array(text.utf8)
                guard !utf8.isEmpty, utf8.count <= limit, utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw MeshError(
                        .invalidArgument,
                        "an invitation's \(field) is 1 to \(limit) printable ASCII characters, got \"\(text.prefix(80))\""
                    )
                }
                bytes.append(UInt8(utf8.count))
                bytes += utf8
            }
        }
        return bytes
    }

    /// Parses a link (surrounding whitespace ignored). Checks the structure only:
    /// call ``verify(now:)`` before trusting it.
    /// - Throws: `MeshError` `.invitationMalformed` saying what is wrong.
    public init(link: String) throws(MeshError) {
        var text = Substring(link)
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        guard text.hasPrefix(Self.linkPrefix) else {
            throw MeshError(
                .invitationMalformed,
                "not an invitation: it should start with \"\(Self.linkPrefix)\" (what `scmesh invite` prints)"
            )
        }
        guard let bytes = Base64URL.decode(text.dropFirst(Self.linkPrefix.count)) else {
            throw MeshError(
                .invitationMalformed,
                "the invitation is not valid base64url after \"\(Self.linkPrefix)\"; was it cut or changed while copying?"
            )
        }
        try self.init(encoded: bytes)
    }

    /// Parses the binary encoding.
    /// - Throws: `MeshError` `.invitationMalformed`.
    public init(encoded bytes: [UInt8]) throws(MeshError) {
        var reader = Reader(bytes: bytes)
        let version = try reader.byte("version")
        guard version == Self.version else {
            throw MeshError(
                .invitationMalformed,
                "the invitation has format version \(version); this node reads version \(Self.version)"
            )
        }
        guard let peer = try? PeerID(bytes: reader.take(32, "peer ID")) else {
            throw MeshError(.invitationMalformed, "the invitation is truncated in its peer ID")
        }
        let expiry = try reader.take(4, "expiry").reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let nameLength = Int(try reader.byte("name length"))
        guard nameLength <= Self.maximumNameBytes else {
            throw MeshError(
                .invitationMalformed,
                "the invitation's name is \(nameLength) bytes, more than \(Self.maximumNameBytes)"
            )
        }
        let nameBytes = try reader.take(nameLength, "name")
        guard let name = String(validating: nameBytes, as: UTF8.self) else {
            throw MeshError(.invitationMalformed, "the invitation's name is not UTF-8")
        }
        let count = Int(try reader.byte("address count"))
        guard count <= Self.maximumAddresses else {
            throw MeshError(
                .invitationMalformed,
                "the invitation lists \(count) addresses, more than \(Self.maximumAddresses)"
            )
        }
        var addresses: [Address] = []
        for index in 0..<count {
            let transport = try reader.ascii(limit: Self.maximumTransportBytes, "address \(index + 1)'s transport")
            let address = try reader.ascii(limit: Self.maximumAddressBytes, "address \(index + 1)")
            addresses.append(Address(transport: transport, address: address))
        }
        let signature = try reader.take(64, "signature")
        guard reader.isAtEnd else {
            throw MeshError(
                .invitationMalformed,
                "the invitation has \(bytes.count - reader.offset) bytes after its signature"
            )
        }
        self.init(
            peerID: peer,
            name: name.isEmpty ? nil : name,
            addresses: addresses,
            expiresAt: expiry,
            signature: signature
        )
    }

    /// Checks the signature, then the expiry.
    /// - Parameter now: the current time in seconds since 1970-01-01 UTC.
    /// - Throws: `MeshError` `.badSignature` when a byte was changed after signing (or
    ///   someone else signed), `.invitationExpired` when `now` is past ``expiresAt``.
    public func verify(now: Int64) throws(MeshError) {
        let fields = try encodedFields()
        guard NodeIdentity.verify(signature: signature, message: Self.signatureContext + fields, signer: peerID) else {
            throw MeshError(
                .badSignature,
                "the invitation's signature does not verify: it was changed after \(peerID.short) signed it; ask for a new one"
            )
        }
        guard now <= Int64(expiresAt) else {
            throw MeshError(
                .invitationExpired,
                "the invitation from \(name ?? peerID.short) expired \(Self.ago(now - Int64(expiresAt))) ago; ask for a new one (`scmesh invite` on that node)"
            )
        }
    }

    /// `3 h 20 min`, `45 s`.
    static func ago(_ seconds: Int64) -> String {
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min" }
        if seconds < 86_400 { return "\(seconds / 3600) h \(seconds % 3600 / 60) min" }
        return "\(seconds / 86_400) d \(seconds % 86_400 / 3600) h"
    }

    /// Reads the binary encoding field by field.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var isAtEnd: Bool { offset == bytes.count }

        mutating func take(_ count: Int, _ field: String) throws(MeshError) -> [UInt8] {
            guard bytes.count - offset >= count else {
                throw MeshError(.invitationMalformed, "the invitation is truncated in its \(field)")
            }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }

        mutating func byte(_ field: String) throws(MeshError) -> UInt8 {
            try take(1, field)[0]
        }

        mutating func ascii(limit: Int, _ field: String) throws(MeshError) -> String {
            let length = Int(try byte("\(field) length"))
            let text = try take(length, field)
            guard length > 0, length <= limit, text.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw MeshError(
                    .invitationMalformed,
                    "the invitation's \(field) is not 1 to \(limit) printable ASCII characters"
                )
            }
            return String(decoding: text, as: UTF8.self)
        }
    }
}

/// Base64 with the URL- and filename-safe alphabet (RFC 4648 §5), without padding.
public enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    static let values: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = Int8(index) }
        return table
    }()

    /// `bytes` in base64url, unpadded.
    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value = chunk.enumerated().reduce(0) { $0 | Int($1.element) << (16 - 8 * $1.offset) }
            for position in 0...chunk.count {
                output.append(alphabet[(value >> (18 - 6 * position)) & 0x3F])
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of unpadded base64url text, or nil when a character is outside the
    /// alphabet, the length is impossible (1 mod 4), or unused trailing bits are set.
    public static func decode(_ text: Substring) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(characters.count * 3 / 4)
        var index = 0
        while index < characters.count {
            let chunk = characters[index..<min(index + 4, characters.count)]
            var value = 0
            for (position, character) in chunk.enumerated() {
                let digit = values[Int(character)]
                guard digit >= 0 else { return nil }
                value |= Int(digit) << (18 - 6 * position)
            }
            let byteCount = chunk.count - 1
            // Canonical form only: the bits below the last byte must be zero.
            guard value & ((1 << (24 - 8 * byteCount)) - 1) == 0 || byteCount == 3 else { return nil }
            for position in 0..<byteCount { output.append(UInt8((value >> (16 - 8 * position)) & 0xFF)) }
            index += 4
        }
        return output
    }
}
