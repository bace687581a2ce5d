/// The optional features of the wire protocol a node speaks, one bit each, as the link
/// handshake's identity proof carries them (docs/PROTOCOL.md §A.11).
///
/// A node sends a feature's frames only on a link where both ends announced it, and
/// ignores (and counts) the frames of a feature that either end did not announce. A
/// peer that announces none of them speaks the minimal profile: handshake, DATA, ACK,
/// PING, PONG.
///
/// ```swift
/// var features = Capabilities.all
/// features.remove(.topics)            // a gateway that relays but routes no topics
/// features.names                      // ["routing", "route_sync", "addresses", ...]
/// ```
public struct Capabilities: OptionSet, Sendable, Hashable {
    /// The 16 bits as the handshake carries them (big-endian on the wire).
    public var rawValue: UInt16

    /// Creates a set from its wire bits; unknown bits are kept (and ignored).
    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// ANNOUNCE (5) and ROUTE REQUEST (9): the node takes part in routing (§A.5).
    public static let routing = Capabilities(rawValue: 0x0001)
    /// ROUTE SUMMARY (10), ROUTE LISTING (11) and ROUTE HOPS (12). Needs ``routing``.
    public static let routeSync = Capabilities(rawValue: 0x0002)
    /// TOPIC MESSAGE (6) and TOPIC CONTROL (7): topic gossip (§A.7).
    public static let topics = Capabilities(rawValue: 0x0004)
    /// ADDRESSES (8): signed address records and transport upgrade (§A.8).
    public static let addresses = Capabilities(rawValue: 0x0008)
    /// DATA with flag `0x0002`: delivery receipts (§A.4).
    public static let receipts = Capabilities(rawValue: 0x0010)
    /// DATA with flag `0x0004`: the flooding fallback (§A.9).
    public static let flooding = Capabilities(rawValue: 0x0020)
    /// DATA with flag `0x0008`: emergency messages (§A.10). Needs ``flooding``.
    public static let emergency = Capabilities(rawValue: 0x0040)
    /// Sealed envelopes of format 2, which bind the frame's ID, flags and a creation
    /// time (§B.3): the node opens them and seals them. Not a `features:` switch.
    public static let sealedV2 = Capabilities(rawValue: 0x0080)
    /// TOPIC MESSAGE format 2, with a signed publication time (§A.7). Needs ``topics``.
    /// Not a `features:` switch.
    public static let topicTime = Capabilities(rawValue: 0x0100)
    /// DATA flag `0x0010`: a flood that routes do not stop (§A.9), started where a route
    /// kept failing. Needs ``flooding``. Not a `features:` switch.
    public static let floodThrough = Capabilities(rawValue: 0x0200)

    /// No optional feature: the minimal profile.
    public static let none: Capabilities = []
    /// Every feature this release defines.
    public static let all: Capabilities = [
        .routing, .routeSync, .topics, .addresses, .receipts, .flooding, .emergency, .sealedV2, .topicTime,
        .floodThrough,
    ]

    /// Each feature an operator may switch off, with its name (the config key under
    /// `features:`), in bit order.
    public static let named: [(name: String, feature: Capabilities)] = [
        ("routing", .routing), ("route_sync", .routeSync), ("topics", .topics), ("addresses", .addresses),
        ("receipts", .receipts), ("flooding", .flooding), ("emergency", .emergency),
    ]

    /// The newer formats of existing frames, with their names, in bit order. Always on
    /// (docs/PROTOCOL.md §A.11): switching `sealed_v2` or `topic_time` off would only
    /// let replays through, and `flood_through` changes how a flood spreads, not
    /// whether the node floods.
    public static let formats: [(name: String, feature: Capabilities)] = [
        ("sealed_v2", .sealedV2), ("topic_time", .topicTime), ("flood_through", .floodThrough),
    ]

    /// The names of the features in the set, in bit order; a bit this release does not
    /// define reads `bit_0xNNNN`.
    public var names: [String] {
        var names = (Self.named + Self.formats).filter { contains($0.feature) }.map(\.name)
        let unknown = rawValue & ~Self.all.rawValue
        for bit in 0..<16 where unknown & (1 << bit) != 0 {
            let hex = String(UInt16(1) << bit, radix: 16)
            names.append("bit_0x" + String(repeating: "0", count: 4 - hex.count) + hex)
        }
        return names
    }

    /// The set with its dependencies enforced: ``routeSync`` without ``routing``,
    /// ``emergency`` and ``floodThrough`` without ``flooding`` and ``topicTime`` without
    /// ``topics`` are dropped.
    public var consistent: Capabilities {
        var set = self
        if !set.contains(.routing) { set.remove(.routeSync) }
        if !set.contains(.flooding) { set.remove([.emergency, .floodThrough]) }
        if !set.contains(.topics) { set.remove(.topicTime) }
        return set
    }

    /// The feature a frame of `kind` belongs to; empty for the minimal profile's
    /// frames (DATA, ACK, PING, PONG).
    package static func required(for kind: Frame.Kind) -> Capabilities {
        switch kind {
        case .data, .ack, .ping, .pong: []
        case .announce, .routeRequest: .routing
        case .routeSummary, .routeListing, .routeHops: .routeSync
        case .topicMessage, .topicControl: .topics
        case .addresses: .addresses
        }
    }
}

extension Frame.Kind {
    /// The name counters and reports use for frames of this type.
    package var name: String {
        switch self {
        case .data: "data"
        case .ack: "ack"
        case .ping: "ping"
        case .pong: "pong"
        case .announce: "announce"
        case .topicMessage: "topic_message"
        case .topicControl: "topic_control"
        case .addresses: "addresses"
        case .routeRequest: "route_request"
        case .routeSummary: "route_summary"
        case .routeListing: "route_listing"
        case .routeHops: "route_hops"
        }
    }

    /// The counter name of a frame type: its name when known, `type_N` otherwise.
    package static func name(ofRaw raw: UInt8) -> String {
        Frame.Kind(rawValue: raw)?.name ?? "type_\(raw)"
    }
}

extension Frame {
    /// The frame's type.
    package var kind: Kind {
        switch self {
        case .data: .data
        case .ack: .ack
        case .ping: .ping
        case .pong: .pong
        case .announce: .announce
        case .addresses: .addresses
        case .topicMessage: .topicMessage
        case .topicControl: .topicControl
        case .routeRequest: .routeRequest
        case .routeSummary: .routeSummary
        case .routeListing: .routeListing
        case .routeHops: .routeHops
        }
    }
}

extension Capabilities {
    /// The one line a node logs when it refuses a link to a peer of another wire
    /// version: both versions, and which side should upgrade.
    package static func versionMismatch(remote: UInt8, at address: String) -> String {
        let local = Frame.version
        let who = remote > local ? "upgrade this node" : "the peer should upgrade"
        return "peer at \(address) speaks SCMesh wire protocol version \(remote), this node version \(local): \(who)"
    }
}
