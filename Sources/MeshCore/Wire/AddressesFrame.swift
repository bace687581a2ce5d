/// A signed address record (frame type 8, ADDRESSES): "I, `peer`, can also be reached
/// over these transports at these addresses". Each end of a link sends its own once
/// the link is authenticated; a receiver dials an address over a transport it ranks
/// above the link it has, so a peer met over a slow transport (BLE) moves to a faster
/// one. Layout and rules in `docs/PROTOCOL.md` §A.8.
package struct AddressesFrame: Sendable, Hashable {
    /// One place the peer listens.
    package struct Entry: Sendable, Hashable {
        /// The transport's name (`tcp`, `mdns`, `ble`, ...): 1…32 bytes of UTF-8.
        package var transport: String
        /// The address in that transport's own form (`192.0.2.7:7420`): 1…255 bytes of UTF-8.
        package var address: String

        /// An entry.
        package init(transport: String, address: String) {
            self.transport = transport
            self.address = address
        }
    }

    /// The node the record is about, and its signer.
    package var peer: PeerID
    /// The peer's record counter: higher is newer (the same clock-based start as
    /// announcements).
    package var sequence: UInt64
    /// Where the peer listens, at most ``maxEntries``.
    package var entries: [Entry]
    /// The peer's 64-byte signature over ``signedBytes(peer:sequence:entries:)``.
    package var signature: [UInt8]

    /// The most entries one record carries.
    package static let maxEntries = 16
    /// Domain separation for the signed bytes (19 ASCII bytes).
    package static let domain = Array("SCMesh addresses v1".utf8)

    /// Creates a record.
    package init(peer: PeerID, sequence: UInt64, entries: [Entry], signature: [UInt8]) {
        self.peer = peer
        self.sequence = sequence
        self.entries = entries
        self.signature = signature
    }

    /// The entries a record can carry: the first ``maxEntries`` whose transport and
    /// address fit their length limits.
    package static func fitting(_ entries: [Entry]) -> [Entry] {
        Array(
            entries.filter { (1...32).contains($0.transport.utf8.count) && (1...255).contains($0.address.utf8.count) }
                .prefix(maxEntries)
        )
    }

    /// The bytes the peer signs: the domain, then the body up to the signature.
    package static func signedBytes(peer: PeerID, sequence: UInt64, entries: [Entry]) -> [UInt8] {
        var writer = ByteWriter(capacity: domain.count + 64 + entries.count * 48)
        writer.write(contentsOf: domain)
        writeUnsigned(peer: peer, sequence: sequence, entries: entries, to: &writer)
        return writer.bytes
    }

    /// Makes and signs this node's own record (entries beyond the limits are left out).
    package static func originate(
        peer: PeerID,
        sequence: UInt64,
        entries: [Entry],
        signer: any ReceiptSigner
    ) -> AddressesFrame {
        let entries = fitting(entries)
        return AddressesFrame(
            peer: peer,
            sequence: sequence,
            entries: entries,
            signature: signer.sign(signedBytes(peer: peer, sequence: sequence, entries: entries))
        )
    }

    /// Whether the peer's signature verifies.
    package func verify(with signer: any ReceiptSigner) -> Bool {
        signature.count == 64
            && signer.verify(
                signature,
                of: Self.signedBytes(peer: peer, sequence: sequence, entries: entries),
                by: peer
            )
    }

    private static func writeUnsigned(peer: PeerID, sequence: UInt64, entries: [Entry], to writer: inout ByteWriter) {
        writer.write(contentsOf: peer.bytes)
        writer.write(sequence)
        writer.write(UInt8(entries.count))
        for entry in entries {
            writer.write(UInt8(entry.transport.utf8.count))
            writer.write(contentsOf: Array(entry.transport.utf8))
            writer.write(UInt8(entry.address.utf8.count))
            writer.write(contentsOf: Array(entry.address.utf8))
        }
    }

    func write(to writer: inout ByteWriter) {
        Self.writeUnsigned(peer: peer, sequence: sequence, entries: entries, to: &writer)
        writer.write(contentsOf: signature)
    }

    /// The encoded body's size.
    var bodySize: Int {
        32 + 8 + 1 + entries.reduce(0) { $0 + 2 + $1.transport.utf8.count + $1.address.utf8.count } + 64
    }

    static func read(from reader: inout ByteReader) throws(MeshError) -> AddressesFrame {
        let peer = try PeerID(bytes: reader.readBytes(32, field: "peer"))
        let sequence = try reader.readInteger(UInt64.self, field: "sequence")
        let count = Int(try reader.readInteger(UInt8.self, field: "entry count"))
        guard count <= maxEntries else {
            throw MeshError(.malformedFrame, "addresses frame: \(count) entries (at most \(maxEntries))")
        }
        var entries: [Entry] = []
        for index in 0..<count {
            let transport = try readText(&reader, field: "transport \(index)", limit: 32)
            let address = try readText(&reader, field: "address \(index)", limit: 255)
            entries.append(Entry(transport: transport, address: address))
        }
        let signature = Array(try reader.readBytes(64, field: "signature"))
        guard reader.remaining == 0 else {
            throw MeshError(.malformedFrame, "addresses frame: \(reader.remaining) trailing bytes")
        }
        return AddressesFrame(peer: peer, sequence: sequence, entries: entries, signature: signature)
    }

    private static func readText(_ reader: inout ByteReader, field: String, limit: Int) throws(MeshError) -> String {
        let length = Int(try reader.readInteger(UInt8.self, field: "\(field) length"))
        guard (1...limit).contains(length) else {
            throw MeshError(.malformedFrame, "addresses frame: \(field) is \(length) bytes (1…\(limit))")
        }
        let bytes = Array(try reader.readBytes(length, field: field))
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw MeshError(.malformedFrame, "addresses frame: \(field) is not UTF-8")
        }
        return text
    }
}
