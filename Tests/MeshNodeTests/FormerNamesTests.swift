import Foundation
import MeshCore
import MeshNode
import MeshStore
import Testing

// Issue 43: replies of a node of an earlier release, still running after an upgrade,
// carry the former field names only; this release's client reads them too.

@Suite("ControlReply reads replies written with the former field names")
struct FormerNamesTests {
    static let peer = String(repeating: "ab", count: 32)
    static let message = "00112233445566778899aabbccddeeff"

    @Test("inbox: id and from; conversation: id and at; history: id; contacts: last_seen; a failure's error")
    func formerNames() throws {
        let inbox = try ControlReply(
            line: Array(
                #"{"ok":true,"total_received":1,"messages":[{"seq":1,"id":"\#(Self.message)","from":"\#(Self.peer)","transport":"tcp","received_at":"2026-11-22T06:32:34Z","bytes":2,"text":"hi"}]}"#
                    .utf8
            )
        ).decode(InboxReply.self)
        #expect(inbox.messages.first?.id.hex == Self.message)
        #expect(inbox.messages.first?.from.hex == Self.peer)

        let conversation = try ControlReply(
            line: Array(
                #"{"ok":true,"peer":"\#(Self.peer)","unread":0,"messages":[{"id":"\#(Self.message)","direction":"out","at":"2026-01-02T03:04:05Z","status":"delivered","bytes":2}]}"#
                    .utf8
            )
        ).decode(ConversationReply.self)
        #expect(conversation.messages.first?.id.hex == Self.message)
        #expect(conversation.messages.first?.at == ISO8601DateFormatter().date(from: "2026-01-02T03:04:05Z"))

        let history = try ControlReply(
            line: Array(
                #"{"ok":true,"outbound_counts":{},"messages":[{"id":"\#(Self.message)","direction":"outbound","peer":"\#(Self.peer)","bytes":2,"status":"sent","created_at":"2026-01-02T03:04:05Z","attempts":1}]}"#
                    .utf8
            )
        ).decode(HistoryReply.self)
        #expect(history.messages.first?.id.hex == Self.message)

        let contacts = try ControlReply(
            line: Array(
                #"{"ok":true,"allow_only":false,"dropped":{},"muted":[],"contacts":[{"alias":"bob","peer":"\#(Self.peer)","blocked":false,"added_at":"2026-01-02T03:04:05Z","last_seen":"2026-01-03T03:04:05Z"}]}"#
                    .utf8
            )
        ).decode(ContactsReply.self)
        #expect(contacts.contacts.first?.lastSeen == ISO8601DateFormatter().date(from: "2026-01-03T03:04:05Z"))

        let failure = try ControlReply(line: Array(#"{"ok":false,"code":"timedOut","error":"no receipt yet"}"#.utf8))
        #expect(!failure.ok && failure.error == "no receipt yet" && failure.code == "timedOut")
        // The current shape: message, with error beside it.
        let current = try ControlReply(
            line: Array(#"{"ok":false,"code":"timedOut","message":"no receipt yet","error":"no receipt yet"}"#.utf8)
        )
        #expect(current.error == "no receipt yet")
    }
}
