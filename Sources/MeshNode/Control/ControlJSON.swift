import Foundation
import MeshCore

/// The JSON conventions of the control socket: snake_case keys, ISO 8601 dates.
public enum ControlJSON {
    /// An encoder producing the socket's JSON (one line, keys sorted).
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// A decoder for the socket's JSON.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        // Not .convertFromSnakeCase: it turns "peer_id" into "peerId", which misses "peerID".
        decoder.keyDecodingStrategy = .custom { path in
            let key = path.last!
            guard key.intValue == nil else { return key }
            return AnyCodingKey(camelCase(key.stringValue))
        }
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// `value` as the socket's JSON, with its former field names beside the current
    /// ones when it has any (``DeprecatedFieldNames``).
    public static func encode(_ value: some Encodable) throws -> Data {
        if let value = value as? any DeprecatedFieldNames {
            return try encoder().encode(WithDeprecatedNames(value))
        }
        return try encoder().encode(value)
    }

    /// `{"ok":true, ...body}` as one line (no newline).
    public static func success(_ body: some Encodable) throws -> [UInt8] {
        withOK(Array(try encode(body)))
    }

    /// A JSON object's bytes with `"ok":true` spliced in first: `{"ok":true,<fields>}`.
    public static func withOK(_ encoded: [UInt8]) -> [UInt8] {
        guard encoded.first == UInt8(ascii: "{"), encoded.count > 2 else { return Array(#"{"ok":true}"#.utf8) }
        return Array(#"{"ok":true,"#.utf8) + encoded.dropFirst()
    }

    /// The one error shape of the control socket, the CLI's `--json` and the HTTP API:
    /// `{"ok":false,"code":code,"message":message}` with `"message_id"` when the failure
    /// concerns a message that has an ID. `deprecatedError` is written as `error` too:
    /// the former shape's field (the message on the socket, the whole error object in
    /// HTTP), kept for one minor release.
    public static func failure(
        _ message: String,
        code: String,
        messageID: MessageID? = nil,
        deprecatedError: (any Encodable)? = nil
    ) -> [UInt8] {
        struct Failure: DeprecatedFieldNames {
            var ok = false
            var code: String
            var message: String
            var messageID: MessageID?
            var error: (any Encodable)?
            var deprecatedFields: [(name: String, value: (any Encodable)?)] { [("error", error)] }

            enum CodingKeys: String, CodingKey {
                case ok, code, message, messageID
            }

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(ok, forKey: .ok)
                try container.encode(code, forKey: .code)
                try container.encode(message, forKey: .message)
                try container.encodeIfPresent(messageID, forKey: .messageID)
            }
        }
        let failure = Failure(code: code, message: message, messageID: messageID, error: deprecatedError ?? message)
        return (try? Array(encode(failure)))
            ?? Array(#"{"ok":false,"code":"internal","message":"internal error","error":"internal error"}"#.utf8)
    }
}

/// `peer_id` → `peerID`, `rtt_milliseconds` → `rttMilliseconds` (the inverse of
/// `JSONEncoder.KeyEncodingStrategy.convertToSnakeCase` for this module's names).
func camelCase(_ snake: String) -> String {
    let parts = snake.split(separator: "_", omittingEmptySubsequences: true)
    guard let first = parts.first, parts.count > 1 else { return snake }
    return String(first)
        + parts.dropFirst().map { $0 == "id" ? "ID" : $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
}
