/// Topic names: `/scmesh/global/v1` and the like.
///
/// A topic name is 1–200 bytes of printable ASCII (0x21–0x7E, so no spaces or
/// control characters) starting with `/`. The rule is part of the wire format
/// (docs/PROTOCOL.md §A.7): a frame naming another topic is malformed.
public enum TopicName {
    /// The emergency broadcast topic (docs/PROTOCOL.md §A.10): every node that takes
    /// part in emergencies subscribes to it and cannot unsubscribe; its messages are
    /// emergencies, within `flood.emergency_per_hour` per origin at every node.
    public static let emergency = "/scmesh/emergency/v1"

    /// The longest topic name, in bytes.
    public static let maxLength = 200

    /// Why `name` is not a valid topic name, or nil when it is one.
    public static func problem(with name: String) -> String? {
        let bytes = Array(name.utf8)
        if bytes.isEmpty { return "a topic name is empty; write it like /scmesh/global/v1" }
        // The name may come from a peer and end up in a log line: quoted escaped.
        if bytes.count > maxLength {
            return "topic \(TerminalText.escaped(name.prefix(40)))… is \(bytes.count) bytes long (at most \(maxLength))"
        }
        if bytes.first != UInt8(ascii: "/") {
            return "topic \"\(TerminalText.escaped(name))\" must start with / (like /scmesh/global/v1)"
        }
        if let bad = bytes.first(where: { $0 < 0x21 || $0 > 0x7E }) {
            return
                "topic \"\(TerminalText.escaped(name))\" contains byte 0x\(String(bad, radix: 16)): only printable ASCII without spaces is allowed"
        }
        return nil
    }

    /// Checks `name`.
    /// - Throws: ``MeshError`` `.invalidArgument` saying what is wrong with it.
    public static func validate(_ name: String) throws(MeshError) {
        if let problem = problem(with: name) { throw MeshError(.invalidArgument, problem) }
    }
}
