import Foundation

/// A reply (or part of one) whose JSON also carries some fields under their former
/// names, beside the current ones and with the same values, so that a client written
/// against the former names keeps working for one minor release. CHANGELOG.md lists
/// every rename; docs/api.md marks the former names deprecated.
public protocol DeprecatedFieldNames: Encodable {
    /// Each former name as it is written (snake_case) and its value; nil values are
    /// left out, as the current field is.
    var deprecatedFields: [(name: String, value: (any Encodable)?)] { get }
}

/// Encodes a value's own fields, then its ``DeprecatedFieldNames/deprecatedFields`` in
/// the same JSON object.
public struct WithDeprecatedNames: Encodable {
    /// The value.
    public let value: any DeprecatedFieldNames

    /// Wraps `value`.
    public init(_ value: any DeprecatedFieldNames) {
        self.value = value
    }

    /// The value's fields, then the former names.
    public func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        for (name, field) in value.deprecatedFields {
            guard let field else { continue }
            try container.encode(field, forKey: AnyCodingKey(name))
        }
    }
}

extension Array where Element: DeprecatedFieldNames {
    /// The elements, each to be encoded with its former field names.
    var withDeprecatedNames: [WithDeprecatedNames] { map(WithDeprecatedNames.init) }
}

extension ControlJSON {
    /// A reply written with the former names only (by a node of an earlier release
    /// that is still running), with each former name's value copied to its new name
    /// where that is missing, so that this release's types decode it; nil when `line`
    /// is not JSON. `id` counts as a message ID only when it is 32 hex characters, and
    /// `from` as a peer only when it is 64 (an event's `id` is a number, its `from` a
    /// transport name).
    static func withCurrentNames(_ line: Data) -> Data? {
        guard let object = try? JSONSerialization.jsonObject(with: line) else { return nil }
        return try? JSONSerialization.data(withJSONObject: currentNames(object))
    }

    private static func currentNames(_ value: Any) -> Any {
        if let array = value as? [Any] { return array.map(currentNames) }
        guard var object = value as? [String: Any] else { return value }
        for (key, inner) in object { object[key] = currentNames(inner) }
        func copy(_ former: String, to name: String, when: (Any) -> Bool = { _ in true }) {
            if object[name] == nil, let value = object[former], when(value) { object[name] = value }
        }
        func isHex(_ count: Int) -> (Any) -> Bool {
            { value in (value as? String).map { $0.utf8.count == count && $0.allSatisfy(\.isHexDigit) } ?? false }
        }
        copy("peer_id", to: "peer")
        copy("id", to: "message_id", when: isHex(32))
        copy("from", to: "peer", when: isHex(64))
        copy("last_seen", to: "last_seen_at")
        copy("last_success", to: "last_success_at")
        copy("time", to: "occurred_at")
        copy("at", to: "created_at")
        copy("at", to: "occurred_at")
        return object
    }
}
