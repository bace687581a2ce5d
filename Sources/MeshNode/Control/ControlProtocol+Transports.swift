import Foundation
import MeshCore
import MeshStore

/// The transports commands: listing them, or switching one off or on. Each replies
/// with every transport afterwards.
public enum TransportsRequest: Sendable, Hashable {
    /// `transports`: the transports as they are.
    case list
    /// `transports_disable`: stops the transport named and keeps it off across restarts.
    case disable(String?)
    /// `transports_enable`: starts the transport named again.
    case enable(String?)

    /// The command's word on the control socket.
    public var name: String {
        switch self {
        case .list: "transports"
        case .disable: "transports_disable"
        case .enable: "transports_enable"
        }
    }
}

/// The reply to `transports`, `transports_disable` and `transports_enable`.
public struct TransportsReply: Codable, Sendable, Hashable {
    /// Every transport the config enables, its state (`starting`, `running`,
    /// `unavailable`, `stopped`, `disabled`), why it is unavailable, and where it listens.
    public var transports: [TransportStatus]
    /// The transports switched off at run time (kept across restarts until enabled).
    public var disabled: [String]
    /// What the command changed, in one line (absent for `transports`).
    public var changed: String?
}

/// The request of `dial`: one address on one transport, dialled now.
public struct DialRequest: Sendable, Hashable {
    /// The transport's name (`tcp`, ...).
    public var transport: String?
    /// The address in the transport's notation (`192.0.2.7:7420` for TCP).
    public var address: String?
    /// How long the dial and the handshake may take, in seconds (default 15, at most 300).
    public var timeoutSeconds: Double?

    /// Creates a request.
    public init(transport: String? = nil, address: String? = nil, timeoutSeconds: Double? = nil) {
        self.transport = transport
        self.address = address
        self.timeoutSeconds = timeoutSeconds
    }
}

/// The reply to `dial`: the peer whose link came up.
public struct DialReply: Codable, Sendable, Hashable {
    /// The peer at that address.
    public var peer: PeerID
    /// Its alias when it is a contact.
    public var alias: String?
    /// The name it claimed in its last handshake with this node (its `node.name`):
    /// self-chosen and not unique; absent when none was heard.
    public var name: String? = nil
    /// The transport dialled.
    public var transport: String
    /// The address dialled (now in the address ledger).
    public var address: String
}

/// The reply to `known_peers`: the address ledger.
public struct KnownPeersReply: Codable, Sendable, Hashable {
    /// One address of one peer and how it worked out.
    public struct Entry: Codable, Sendable, Hashable {
        /// The peer.
        public var peer: PeerID
        /// Its alias when it is a contact.
        public var alias: String?
        /// The name it claimed in its last handshake with this node (its `node.name`):
        /// self-chosen and not unique; absent when none was heard.
        public var name: String? = nil
        /// The transport.
        public var transport: String
        /// The address, in the transport's notation.
        public var address: String
        /// Links made through it.
        public var successes: Int
        /// Failed dials and handshakes.
        public var failures: Int
        /// When it was last seen: discovered, tried or used (`last_seen_at`; formerly
        /// `last_seen`, still written, deprecated).
        public var lastSeen: Date
        /// When it last worked (`last_success_at`; formerly `last_success`, still
        /// written, deprecated).
        public var lastSuccess: Date?
        /// Whether the peer has a live link now.
        public var connected: Bool

        enum CodingKeys: String, CodingKey {
            case lastSeen = "lastSeenAt"
            case lastSuccess = "lastSuccessAt"
            case peer, alias, name, transport, address, successes, failures, connected
        }
    }

    /// Every address of every peer, best first (the most recent success first).
    public var known: [Entry]

    enum CodingKeys: String, CodingKey {
        case known
    }

    /// Encodes the entries with their former field names too.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(known.withDeprecatedNames, forKey: .known)
    }
}

extension KnownPeersReply.Entry: DeprecatedFieldNames {
    /// `last_seen` and `last_success`, the former names of `last_seen_at` and `last_success_at`.
    public var deprecatedFields: [(name: String, value: (any Encodable)?)] {
        [("last_seen", lastSeen), ("last_success", lastSuccess)]
    }
}

/// How well connected a node is, from its number of live peers (the seed's thresholds).
public enum NetworkQuality: String, Sendable, Codable, CaseIterable {
    /// No peer.
    case offline
    /// One or two peers.
    case poor
    /// Three to five peers.
    case good
    /// Six or more.
    case excellent

    /// The quality with `peerCount` live peers.
    public init(peerCount: Int) {
        switch peerCount {
        case ..<1: self = .offline
        case 1...2: self = .poor
        case 3...5: self = .good
        default: self = .excellent
        }
    }

    /// Its number for `/metrics` (`scmesh_network_quality`): 0 offline … 3 excellent.
    public var level: Int { Self.allCases.firstIndex(of: self) ?? 0 }
}
