import Foundation
import MeshCore
import MeshNode
import MeshStore
import Testing

/// The typed command layer against the control socket's JSON: every command word
/// becomes a command and travels back as the same line; the history model keeps the
/// reply's shape.
@Suite("NodeCommand")
struct NodeCommandTests {
    static func decode(_ line: String) throws -> NodeCommand {
        try ControlJSON.decoder().decode(NodeCommand.self, from: Data(line.utf8))
    }

    static func encode(_ value: some Encodable) throws -> String {
        String(decoding: try ControlJSON.encoder().encode(value), as: UTF8.self)
    }

    @Test("every command word decodes to the command of that name and encodes back to it")
    func everyWord() throws {
        #expect(Set(NodeCommand.names).count == NodeCommand.names.count, "each word once")
        for name in NodeCommand.names {
            let command = try Self.decode(#"{"cmd":"\#(name)"}"#)
            #expect(command.name == name)
            #expect(try Self.encode(command) == #"{"cmd":"\#(name)"}"#)
        }
    }

    @Test(
        "each command's fields travel both ways unchanged",
        arguments: [
            #"{"cmd":"send","emergency":true,"expires_seconds":30,"message_id":"00112233445566778899aabbccddeeff","payload_base64":"aGk=","peer":"bob","text":"hi","timeout_seconds":5,"wait":true}"#,
            #"{"after":3,"cmd":"inbox","limit":10,"payloads":false}"#,
            #"{"cmd":"history","limit":50,"peer":"bob"}"#,
            #"{"cmd":"outbox","limit":5,"peer":"carol"}"#,
            #"{"cmd":"trace","message_id":"00112233445566778899aabbccddeeff"}"#,
            #"{"alias":"bob","cmd":"contacts_add","note":"met","peer":"abcd"}"#,
            #"{"alias":"bob","cmd":"contacts_remove"}"#,
            #"{"cmd":"contacts_block","peer":"abcd"}"#,
            #"{"cmd":"contacts_mute","peer":"abcd"}"#,
            #"{"after":12,"cmd":"events","limit":100}"#,
            #"{"cmd":"contacts_unblock","peer":"abcd"}"#,
            #"{"cmd":"contacts_allow_only","on":true}"#,
            #"{"cmd":"subscribe","topic":"/t"}"#,
            #"{"cmd":"unsubscribe","topic":"/t"}"#,
            #"{"cmd":"publish","payload_base64":"aGk=","text":"hi","topic":"/t"}"#,
            #"{"cmd":"settings","discovery_mode":"cautious","relay_battery_floor_percent":20,"relay_enabled":false,"relay_max_per_hour":100,"relay_neighbour_share":0.5}"#,
            #"{"cmd":"invite","expires_seconds":600}"#,
            #"{"alias":"alice","cmd":"join","invitation":"scmesh:x"}"#,
            #"{"cmd":"settings","reset":true}"#,
            #"{"cmd":"transports_disable","transport":"mdns"}"#,
            #"{"cmd":"transports_enable","transport":"mdns"}"#,
            #"{"address":"127.0.0.1:7420","cmd":"dial","timeout_seconds":5,"transport":"tcp"}"#,
            #"{"alias":"bob","cmd":"contacts_rename","new_alias":"robert"}"#,
            #"{"cmd":"contacts_note","note":"met","peer":"bob"}"#,
            #"{"cmd":"history","grep":"hello","peer":"bob"}"#,
            #"{"after":3,"cmd":"inbox","unread":true}"#,
            #"{"cmd":"conversation","limit":20,"peer":"bob"}"#,
            #"{"cmd":"read","ids":["abcd","0011"]}"#,
            #"{"all":true,"cmd":"read","peer":"bob"}"#,
            #"{"cmd":"history_clear","peer":"bob"}"#,
            #"{"cmd":"inbox_delete","seq":7}"#,
            #"{"cmd":"inbox_delete","message_id":"0011aa"}"#,
            #"{"cmd":"power","power_override":"relay_max_per_hour=100"}"#,
            #"{"clear_overrides":true,"cmd":"power","profile":"reduced"}"#,
            #"{"auto":true,"cmd":"power"}"#,
        ]
    )
    func roundTrip(line: String) throws {
        #expect(try Self.encode(Self.decode(line)) == line)
    }

    @Test(
        "a request with the former field id is still read; the command is sent with message_id",
        arguments: ["send", "trace", "inbox_delete"]
    )
    func formerIDIsReadCurrentNameSent(word: String) throws {
        let id = "00112233445566778899aabbccddeeff"
        let command = try Self.decode(#"{"cmd":"\#(word)","id":"\#(id)"}"#)
        #expect(try Self.encode(command) == #"{"cmd":"\#(word)","message_id":"\#(id)"}"#)
    }

    @Test("contacts_remove takes the contact by peer when the request names no alias")
    func removeByPeer() throws {
        #expect(try Self.decode(#"{"cmd":"contacts_remove","peer":"abcd"}"#) == .contacts(.remove("abcd")))
    }

    @Test("an unknown command word is refused naming the known ones")
    func unknownWord() throws {
        #expect {
            try Self.decode(#"{"cmd":"statsu"}"#)
        } throws: { error in
            let message = (error as? MeshError)?.message ?? ""
            return message.hasPrefix(#"unknown cmd "statsu" (known: status, peers, routes"#)
        }
    }

    @Test(
        "a history message is the store's entry with alias and waiting_for beside its fields, and id (deprecated) beside message_id"
    )
    func historyMessageShape() throws {
        let line =
            #"{"alias":"bob","attempts":2,"bytes":5,"created_at":"2026-01-02T03:04:05Z","delivered_at":"2026-01-02T03:04:07Z","direction":"outbound","expires_at":"2026-01-03T03:04:05Z","failed_at":"2026-01-02T03:04:08Z","id":"00112233445566778899aabbccddeeff","message_id":"00112233445566778899aabbccddeeff","peer":"\#(String(repeating: "ab", count: 32))","reason":"no link","sent_at":"2026-01-02T03:04:06Z","status":"delivered","transport":"tcp","waiting_for":"a retry"}"#
        let message = try ControlJSON.decoder().decode(HistoryMessage.self, from: Data(line.utf8))
        #expect(message.alias == "bob")
        #expect(message.status == .delivered)
        #expect(message.attempts == 2)
        #expect(try Self.encode(message) == line)
        var bare = message
        bare.alias = nil
        bare.waitingFor = nil
        let entry = try Self.encode(message.entry)
        #expect(!entry.contains(#""id""#), "the store's entry has message_id only: \(entry)")
        #expect(
            try Self.encode(bare)
                == entry.replacingOccurrences(
                    of: #""message_id""#,
                    with: #""id":"00112233445566778899aabbccddeeff","message_id""#
                )
        )
    }
}
