/// A coding key that accepts any string (to list what a container really holds).
private struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Decoder {
    /// Throws when the keyed container being decoded holds a key that `Keys` does not
    /// list, so a typo in a config file is an error that names the key instead of a
    /// setting silently left at its default.
    ///
    /// Call it first in a configuration's `init(from:)`:
    /// ```swift
    /// try decoder.rejectUnknownKeys(CodingKeys.self, section: "TCP transport")
    /// ```
    /// - Throws: `DecodingError.dataCorrupted` whose coding path ends with the unknown
    ///   key and whose description lists the known ones.
    package func rejectUnknownKeys<Keys: CodingKey & CaseIterable>(_: Keys.Type, section: String) throws {
        let container = try self.container(keyedBy: AnyCodingKey.self)
        let known = Keys.allCases.map(\.stringValue)
        for key in container.allKeys where !known.contains(key.stringValue) {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: container.codingPath + [key],
                    debugDescription:
                        "unknown \(section) key '\(key.stringValue)'; known keys: \(known.joined(separator: ", "))"
                )
            )
        }
    }
}
