import Foundation
import MeshCore
import MeshNode
import Testing

@Suite("Conversation and history text reports")
struct ConversationTextTests {
    static let peer = String(repeating: "ab", count: 32)

    static func reply(_ messages: String) throws -> ConversationReply {
        let line = #"{"peer":"\#(peer)","alias":"bob","unread":1,"messages":[\#(messages)]}"#
        return try ControlJSON.decoder().decode(ConversationReply.self, from: Data(line.utf8))
    }

    @Test("a conversation shows who wrote each message, its status, unread mark and whole text; binary as such")
    func conversation() throws {
        let text = TextReport.conversation(
            try Self.reply(
                #"""
                {"message_id":"00112233445566778899aabbccddeeff","direction":"out","created_at":"2026-01-02T03:04:05Z","status":"delivered","text":"hi\nthere","bytes":8},
                {"message_id":"00112233445566778899aabbccddee00","direction":"in","created_at":"2026-01-02T03:04:06Z","status":"received","head_base64":"AAH/","bytes":3,"unread":true}
                """#
            )
        )
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "conversation with bob (\(Self.peer)) (1 unread)", "\(text)")
        #expect(lines[1] == "2026-01-02T03:04:05Z  me  [delivered]  00112233")
        #expect(lines[2] == "    hi" && lines[3] == "    there")
        #expect(
            lines[4] == "2026-01-02T03:04:06Z  bob (abababab…)  [received]  unread  00112233"
        )
        #expect(lines[5] == "    (binary) (3 bytes)")
        #expect(TextReport.conversation(try Self.reply("")) == "no messages with bob (\(Self.peer)) in the history")
    }
}
