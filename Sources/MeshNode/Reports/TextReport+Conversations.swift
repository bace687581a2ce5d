import Foundation
import MeshCore
import MeshStore

extension TextReport {
    /// `scmesh conversation PEER`: one block per message, oldest first.
    public static func conversation(_ reply: ConversationReply, full: Bool = false) -> String {
        let name = named(reply.peer, alias: reply.alias, name: reply.name, full: true)
        guard !reply.messages.isEmpty else { return "no messages with \(name) in the history" }
        var lines = ["conversation with \(name) (\(reply.unread) unread)"]
        for message in reply.messages {
            let who =
                message.direction == "in" ? named(reply.peer, alias: reply.alias, name: reply.name, full: full) : "me"
            let mark = message.unread == true ? "  unread" : ""
            lines.append(
                "\(timestamp(message.at))  \(who)  [\(escaped(message.status))]\(mark)  \(messageID(message.id, full: full))"
            )
            if let text = message.text {
                lines.append("    " + escaped(text, newlines: "\n    "))
            } else {
                lines.append(
                    "    " + snippet(nil, headBase64: message.headBase64, bytes: message.bytes)
                        + " (\(message.bytes) bytes)"
                )
            }
        }
        return lines.joined(separator: "\n")
    }

    /// `scmesh conversations`: one row per peer, the most recent first.
    public static func conversations(_ reply: ConversationsReply, full: Bool = false) -> String {
        guard !reply.conversations.isEmpty else { return "no conversations in the history" }
        var rows = [["PEER", "MESSAGES", "UNREAD", "LAST"]]
        for conversation in reply.conversations {
            rows.append([
                named(conversation.peer, alias: conversation.alias, name: conversation.name, full: full),
                String(conversation.messages),
                String(conversation.unread), timestamp(conversation.lastAt),
            ])
        }
        return table(rows) + "\n\(reply.unread) unread in all"
    }

    /// `scmesh read`.
    public static func read(_ reply: ReadReply) -> String {
        "marked \(reply.marked) message\(reply.marked == 1 ? "" : "s") read; \(reply.unread) unread"
    }

    /// `scmesh history clear` and `scmesh inbox delete`.
    public static func cleared(_ reply: ClearReply) -> String {
        "deleted \(reply.deleted) entr\(reply.deleted == 1 ? "y" : "ies")"
    }

    /// A message's text in one short line (its first line, at most 60 characters), the
    /// start of a longer text, or `(binary)`.
    static func snippet(_ text: String?, headBase64: String?, bytes: Int) -> String {
        if let text {
            let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let short = line.count > 60 || line.count < text.count ? line.prefix(60) + "…" : line
            return escaped(String(short))
        }
        guard let head = headBase64.flatMap({ Data(base64Encoded: $0) }).map({ [UInt8]($0) }) else { return "" }
        if head.count < bytes, let start = textStart(head),
            start.unicodeScalars.allSatisfy({ $0.value >= 0x20 || "\n\t\r".unicodeScalars.contains($0) })
        {
            return escaped(String(start.prefix(60))) + "…"
        }
        return "(binary)"
    }
}
