import Foundation
import MeshCore
import Yams

/// A value in the effective configuration, as ``NodeConfiguration/value(at:)`` reads it.
public enum ConfigValue: Sendable, Hashable {
    /// A single value as written (`"true"`, `"30"`, `"127.0.0.1:7420"`).
    case scalar(String)
    /// `null`.
    case null
    /// A list.
    case list([ConfigValue])
    /// A section, keys in order.
    case section([String: ConfigValue])

    init(_ node: YAMLNode) {
        switch node {
        case .scalar(let scalar): self = node.null != nil ? .null : .scalar(scalar.string)
        case .sequence(let sequence): self = .list(sequence.map(ConfigValue.init))
        case .mapping(let mapping):
            self = .section(
                Dictionary(mapping.map { (ConfigTree.keyName($0.key), ConfigValue($0.value)) }) { a, _ in a }
            )
        case .alias: self = .null
        }
    }

    /// The scalar's text, or nil.
    public var text: String? {
        if case .scalar(let text) = self { return text }
        return nil
    }

    /// The list's scalar items, or nil when this is not a list.
    public var texts: [String]? {
        if case .list(let items) = self { return items.compactMap(\.text) }
        return nil
    }
}

extension NodeConfiguration {
    /// The effective value at a dotted key (`transports.tcp.listen`), or nil when the
    /// key does not exist.
    public func value(at dottedKey: String) throws -> ConfigValue? {
        let path = dottedKey.split(separator: ".").map(String.init)
        return ConfigTree.value(at: path, in: try tree()).map(ConfigValue.init)
    }
}
