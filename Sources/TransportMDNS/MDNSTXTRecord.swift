import MeshCore

/// The TXT record of an SCMesh service: short `key=value` strings a browser reads
/// before it decides to dial.
///
/// | key | value | when |
/// | --- | --- | --- |
/// | `v` | protocol major version, `1` | always |
/// | `id` | the node's peer ID, 64 lowercase hex digits | `normal` mode only |
///
/// A browser skips a service whose `v` names another major version, and skips its own
/// service (same `id`). Nothing else is published: capabilities and identity are
/// exchanged in the authenticated link handshake, so a `cautious` node reveals nothing
/// before it.
struct MDNSTXTRecord: Hashable, Sendable {
    /// The protocol major version this build speaks.
    static let protocolVersion = "1"
    /// TXT key of the protocol version.
    static let versionKey = "v"
    /// TXT key of the peer ID.
    static let peerIDKey = "id"
    /// Keys Avahi itself may add, which are not ours (lowercased, as keys are compared).
    static let ignoredKeys: Set<String> = ["org.freedesktop.avahi.cookie"]

    /// The decoded fields (a key without `=` has an empty value).
    var fields: [String: String]

    /// Decodes TXT strings; the first occurrence of a key wins (RFC 6763 §6.4).
    init(strings: [String]) {
        var fields: [String: String] = [:]
        for string in strings where !string.isEmpty {
            let key: String
            let value: String
            if let equals = string.firstIndex(of: "=") {
                key = String(string[..<equals]).lowercased()
                value = String(string[string.index(after: equals)...])
            } else {
                key = string.lowercased()
                value = ""
            }
            guard !key.isEmpty, !Self.ignoredKeys.contains(key), fields[key] == nil else { continue }
            fields[key] = value
        }
        self.fields = fields
    }

    /// The record we publish: version always, peer ID when `identity` is given.
    init(identity: PeerID?) {
        var fields = [Self.versionKey: Self.protocolVersion]
        if let identity { fields[Self.peerIDKey] = identity.hex }
        self.fields = fields
    }

    /// The strings to hand Avahi, in a stable order (`v` first).
    var strings: [String] {
        fields.sorted { lhs, rhs in
            if lhs.key == Self.versionKey { return rhs.key != Self.versionKey }
            if rhs.key == Self.versionKey { return false }
            return lhs.key < rhs.key
        }.map { "\($0.key)=\($0.value)" }
    }

    /// The peer ID, when the record carries a valid one.
    var peerID: PeerID? { fields[Self.peerIDKey].flatMap { PeerID(hex: $0) } }

    /// Whether we can talk to this service: `v` absent (unknown, try the handshake) or
    /// with our major version.
    var isCompatible: Bool {
        guard let version = fields[Self.versionKey] else { return true }
        let major = version.split(separator: ".", maxSplits: 1).first.map(String.init) ?? version
        return major == Self.protocolVersion
    }
}
