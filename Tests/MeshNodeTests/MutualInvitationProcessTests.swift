import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// Mutual invitations between real `scmesh run` processes over TCP on 127.0.0.1: the
// inviter, in allow-list mode, learns who joined, adds the joiner as a contact under
// its node.name and then accepts its messages; a revoked invitation adds nobody.
// Every wait is a bounded poll.

@Suite("mutual invitations between node processes")
struct MutualInvitationProcessTests {
    @Test("the inviter adds the joiner (alias from node.name), lists it in invites; a revoked invitation adds nobody")
    func inviterLearnsWhoJoined() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        var started: [NodeProcesses.Node] = []
        for (name, alias) in [("a", "alice"), ("b", "bob"), ("c", "carol")] {
            started.append(
                try await nodes.start(
                    name,
                    ["--set", "transports.tcp.listen=127.0.0.1:0", "--set", "node.name=\(alias)"]
                )
            )
        }
        let (a, b, c) = (started[0].dataDirectory, started[1].dataDirectory, started[2].dataDirectory)
        let clients = started.map(\.client)
        let (idB, idC) = (started[1].peerID, started[2].peerID)
        let allowOnly = try await runScmesh(["contacts", "allow-only", "on", "--data-dir", a], home: home)
        #expect(allowOnly.status == 0, "\(allowOnly.standardError)")

        // 1. Bob joins alice's invitation: alice hears of it and adds him as "bob".
        let invite = try jsonObject(
            try await runScmesh(["invite", "--data-dir", a, "--json"], home: home).standardOutput
        )
        let link = try #require(invite["link"] as? String)
        let inviteID = try #require(invite["id"] as? String)
        #expect(inviteID.count == 16)
        let joined = try await runScmesh(["join", "--data-dir", b, link], home: home)
        #expect(joined.status == 0, "\(joined.standardError)")
        // The invitation records the joiner and the contact is added in two steps: wait
        // for both.
        try await eventually("alice lists bob as joined and as a contact", attempts: 3000) {
            let reply = try await clients[0].call(.invites).decode(InvitesReply.self)
            let contacts = try await clients[0].call(.contacts(.list)).decode(ContactsReply.self).contacts
            return reply.invitations.first { $0.id == inviteID }?.joined.map(\.peer) == [idB]
                && !contacts.isEmpty
        }
        let contacts = try await clients[0].call(.contacts(.list)).decode(ContactsReply.self).contacts
        #expect(contacts.map(\.alias) == ["bob"] && contacts.first?.peer == idB, "\(contacts)")
        // The event is recorded just after the contact is added.
        try await eventually("alice records invite_accepted", attempts: 300) {
            let events = try await runScmesh(["events", "--data-dir", a, "--json", "--limit", "4096"], home: home)
            return events.standardOutput.contains(#""kind":"invite_accepted""#)
        }
        let listed = try await runScmesh(["invites", "--data-dir", a], home: home)
        #expect(
            listed.standardOutput.contains("\(inviteID)") && listed.standardOutput.contains("bob ("),
            "\(listed.standardOutput)"
        )
        // Allow-list mode lets the person it invited through.
        let hello = try await runScmesh(
            ["send", "--data-dir", b, "--wait", "alice", "thanks for the invite"],
            home: home
        )
        #expect(
            hello.status == 0 && hello.standardOutput.contains("delivered"),
            "\(hello.standardOutput) \(hello.standardError)"
        )
        #expect(try await inboxTexts(dataDirectory: a, home: home) == ["thanks for the invite"])

        // 2. A revoked invitation: carol joins it, alice adds nobody.
        let second = try jsonObject(
            try await runScmesh(["invite", "--data-dir", a, "--json"], home: home).standardOutput
        )
        let secondID = try #require(second["id"] as? String)
        #expect(secondID != inviteID, "a second invitation, even within the same second, is another one")
        let revoked = try await runScmesh(
            ["invite", "--data-dir", a, "--revoke", String(secondID.prefix(6))],
            home: home
        )
        #expect(
            revoked.status == 0 && revoked.standardOutput.contains("revoked invitation \(secondID)"),
            "\(revoked.standardOutput)"
        )
        let carol = try await runScmesh(["join", "--data-dir", c, try #require(second["link"] as? String)], home: home)
        #expect(carol.status == 0, "\(carol.standardError)")
        // Carol's acceptance is delivered (alice acknowledged it), and ignored.
        try await eventually("carol's acceptance reached alice", attempts: 3000) {
            try await clients[2].call(.outbox(MessageQuery())).decode(OutboxReply.self).messages.isEmpty
        }
        let after = try await clients[0].call(.contacts(.list)).decode(ContactsReply.self).contacts
        #expect(!after.contains { $0.peer == idC }, "\(after)")
        let reply = try await clients[0].call(.invites).decode(InvitesReply.self)
        #expect(
            reply.invitations.first { $0.id == secondID }.map { $0.revoked && $0.joined.isEmpty } == true,
            "\(reply.invitations)"
        )
        let unknown = try await runScmesh(["invite", "--data-dir", a, "--revoke", "ffffffff"], home: home)
        #expect(
            unknown.status != 0 && unknown.standardError.contains("no invitation issued here"),
            "\(unknown.standardError)"
        )
    }
}
