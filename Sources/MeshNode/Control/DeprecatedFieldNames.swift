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
