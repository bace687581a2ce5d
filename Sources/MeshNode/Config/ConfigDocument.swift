import Yams

/// The node's own part of a config document: `node:`, `store:`, `topics:`, `http:`,
/// `power:` and `notify:`. `transports:` is read through
/// the registry (``ConfigLoader/decodeTransports()``); every other top-level key is the
/// router's (`RouterConfiguration`).
struct ConfigDocument: Decodable {
    /// The top-level keys that are not the router's.
    static let nodeKeys: Set<String> = ["node", "store", "topics", "http", "power", "notify", "messages", "transports"]

    /// Keys that moved, old dotted name → new one, so an old config gets a hint rather
    /// than a bare "unknown key".
    static let movedKeys = [
        "node.inbox_capacity": "store.inbox_capacity", "node.inbox_max_bytes": "store.inbox_max_bytes",
    ]

    var node: NodeConfiguration.NodeSettings
    var store: NodeConfiguration.StoreSettings
    var topics: NodeConfiguration.TopicSettings
    var http: NodeConfiguration.HTTPSettings
    var power: NodeConfiguration.PowerSettings
    var notify: NodeConfiguration.NotifySettings
    var messages: NodeConfiguration.MessagesSettings

    enum CodingKeys: String, CodingKey {
        case node, store, topics, http, power, notify, messages
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        node = try container.decode(NodeConfiguration.NodeSettings.self, forKey: .node)
        store = try container.decode(NodeConfiguration.StoreSettings.self, forKey: .store)
        topics = try container.decode(NodeConfiguration.TopicSettings.self, forKey: .topics)
        http = try container.decode(NodeConfiguration.HTTPSettings.self, forKey: .http)
        power = try container.decode(NodeConfiguration.PowerSettings.self, forKey: .power)
        notify = try container.decode(NodeConfiguration.NotifySettings.self, forKey: .notify)
        messages = try container.decode(NodeConfiguration.MessagesSettings.self, forKey: .messages)
    }
}

/// The keys every transport section has.
struct TransportHeader: Decodable {
    var enabled: Bool
    var priority: Int
}

extension DecodingError {
    /// The same error with `prefix` in front of its coding path.
    func prefixed(with prefix: [any CodingKey]) -> DecodingError {
        func context(_ c: Context) -> Context {
            Context(
                codingPath: prefix + c.codingPath,
                debugDescription: c.debugDescription,
                underlyingError: c.underlyingError
            )
        }
        switch self {
        case .typeMismatch(let type, let c): return .typeMismatch(type, context(c))
        case .valueNotFound(let type, let c): return .valueNotFound(type, context(c))
        case .keyNotFound(let key, let c): return .keyNotFound(key, context(c))
        case .dataCorrupted(let c): return .dataCorrupted(context(c))
        @unknown default: return self
        }
    }
}

/// A coding key for any string.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
