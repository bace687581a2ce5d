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

    /// `{"ok":true, ...body}` as one line (no newline).
    public static func success(_ body: some Encodable) throws -> [UInt8] {
        let encoded = Array(try encoder().encode(body))
        // Splice "ok" into the body's object: {"ok":true,<body fields>}.
        guard encoded.first == UInt8(ascii: "{"), encoded.count > 2 else { return Array(#"{"ok":true}"#.utf8) }
        return Array(#"{"ok":true,"#.utf8) + encoded.dropFirst()
    }

    /// `{"ok":false,"error":message,"code":code}` as one line, with `"message_id"` when
    /// the failure concerns a message that has an ID.
    public static func failure(_ message: String, code: String, messageID: MessageID? = nil) -> [UInt8] {
        struct Failure: Encodable {
            var ok = false
            var error: String
            var code: String
            var messageID: MessageID?
        }
        return (try? Array(encoder().encode(Failure(error: message, code: code, messageID: messageID))))
            ?? Array(#"{"ok":false,"error":"internal error"}"#.utf8)
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
