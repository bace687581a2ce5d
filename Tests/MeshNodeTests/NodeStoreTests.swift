import Foundation
import MeshCore
import MeshCrypto
import MeshNode
import MeshStore
import MeshTesting
import TestSupport
import Testing

// The node's store-and-forward commands between in-process nodes (loopback transport,
// real SQLite stores): aliases, blocking and allow-list mode, history, trace, outbox,
// idempotent retries and expiry.

@Suite("Node store commands")
struct NodeStoreTests {
    static func yaml(network: String, extra: String = "") -> String {
        """
        relay: {enabled: true}
        transports:
          loopback: {enabled: true, network: \(network)}
        \(extra)
        """
    }

    /// Sends and returns the reply (a failure throws with the node's message).
    static func send(
        _ node: RunningNode,
        to peer: String,
        _ text: String,
        wait: Bool? = nil,
        id: String? = nil
    ) async throws -> SendReply {
        try await node.client.call(.send(SendRequest(peer: peer, text: text, id: id, wait: wait))).decode(
            SendReply.self
        )
    }

    static func inboxTexts(_ node: RunningNode) async throws -> [String] {
        try await node.client.call(.inbox(InboxRequest())).decode(InboxReply.self).messages.compactMap(\.text)
    }

    static func contacts(_ node: RunningNode, _ request: NodeCommand) async throws -> ContactsReply {
        try await node.client.call(request).decode(ContactsReply.self)
    }

    @Test("an alias works wherever a peer ID does; bad aliases and unknown names are refused with what to do")
    func aliases() async throws {
        let yaml = Self.yaml(network: UUID().uuidString)
        let alice = try await RunningNode.start(yaml: yaml)
        let bob = try await RunningNode.start(yaml: yaml)
        defer {
            alice.directory.cleanUp()
            bob.directory.cleanUp()
        }
        let book = try await Self.contacts(
            alice,
            .contacts(.add(alias: "bob", peer: bob.node.peerID.hex, note: "met at the meetup"))
        )
        #expect(book.contacts.map(\.alias) == ["bob"])
        #expect(book.contacts.first?.note == "met at the meetup")
        #expect(book.changed?.contains("added bob") == true)

        try await eventually("alice has a link to bob") { !(await alice.node.router.peers().isEmpty) }
        let sent = try await Self.send(alice, to: "bob", "hi by alias", wait: true)
        #expect(sent.peer == bob.node.peerID)
        #expect(sent.alias == "bob")
        #expect(sent.status == .delivered)
        #expect(sent.transport == "loopback")
        #expect(sent.waitedSeconds != nil)
        #expect(try await Self.inboxTexts(bob) == ["hi by alias"])

        let history = try await alice.client.call(.history(MessageQuery(peer: "BOB"))).decode(HistoryReply.self)
        #expect(history.messages.map(\.id) == [sent.messageID])
        #expect(history.messages.first?.alias == "bob")
        #expect(history.outboundCounts == ["delivered": 1])

        let unknown = try await alice.client.call(.send(SendRequest(peer: "carol", text: "x")))
        #expect(unknown.code == MeshError.Code.invalidArgument.name)
        #expect(unknown.error?.contains("no contact has the alias \"carol\"") == true, "\(unknown.line)")
        let taken = try await alice.client.call(.contacts(.add(alias: "Bob", peer: PeerID.random().hex, note: nil)))
        #expect(taken.error?.contains("already taken") == true, "\(taken.line)")
        let hexAlias = try await alice.client.call(
            .contacts(.add(alias: PeerID.random().hex, peer: PeerID.random().hex, note: nil))
        )
        #expect(hexAlias.error?.contains("is a peer ID") == true, "\(hexAlias.line)")

        let removed = try await Self.contacts(alice, .contacts(.remove("bob")))
        #expect(removed.contacts.isEmpty)
        #expect(try await alice.client.call(.send(SendRequest(peer: "bob", text: "x"))).ok == false)
        try await alice.stop()
        try await bob.stop()
    }

    @Test(
        "a blocked peer's messages are acknowledged and dropped (never in the inbox, no receipt, counted); unblocking lets new ones in; allow-list mode drops non-contacts"
    )
    func blockingAndAllowList() async throws {
        let yaml = Self.yaml(network: UUID().uuidString)
        let alice = try await RunningNode.start(yaml: yaml)
        let bob = try await RunningNode.start(yaml: yaml)
        defer {
            alice.directory.cleanUp()
            bob.directory.cleanUp()
        }
        let aliceID = alice.node.peerID.hex
        let bobID = bob.node.peerID.hex
        try await eventually("alice has a link to bob") { !(await alice.node.router.peers().isEmpty) }

        // Block a stranger by peer ID: it becomes a placeholder contact.
        let blocked = try await Self.contacts(bob, .contacts(.block(peer: aliceID)))
        #expect(blocked.contacts.map(\.alias) == ["blocked-\(alice.node.peerID.short)"])
        #expect(blocked.contacts.first?.blocked == true)
        // Accept and drop: the sender's message is acknowledged (sent: it does not
        // retry) but never delivered (no receipt), and it never reaches the inbox.
        let dropped = try await Self.send(alice, to: bobID, "while blocked")
        let record = try await alice.node.router.waitForStatus(
            of: dropped.messageID,
            until: .sent,
            timeout: .seconds(60)
        )
        #expect(record.status == .sent)
        try await eventually("bob dropped the message") { bob.node.contactFilter.counters == ["dropped.blocked": 1] }
        #expect(try await Self.inboxTexts(bob).isEmpty)
        #expect(await bob.node.router.stats().sinkDiscards == 1)
        let status = try await bob.client.call(.status).decode(StatusReply.self)
        #expect(status.transportCounters?["contacts"] == ["dropped.blocked": 1])

        // Unblocking a placeholder removes it; new messages arrive, the dropped one does not.
        let unblocked = try await Self.contacts(bob, .contacts(.unblock(peer: aliceID)))
        #expect(unblocked.contacts.isEmpty)
        _ = try await Self.send(alice, to: bobID, "after unblocking", wait: true)
        #expect(try await Self.inboxTexts(bob) == ["after unblocking"])
        // The dropped message's receipt would have come back by now: there is none.
        #expect(await alice.node.router.status(of: dropped.messageID)?.status == .sent)

        // Allow-list mode: only contacts get through.
        let allowOnly = try await Self.contacts(bob, .contacts(.allowOnly(true)))
        #expect(allowOnly.allowOnly)
        _ = try await Self.send(alice, to: bobID, "not a contact")
        try await eventually("bob dropped the non-contact's message") {
            bob.node.contactFilter.counters["dropped.not_a_contact"] == 1
        }
        #expect(try await Self.inboxTexts(bob) == ["after unblocking"])
        _ = try await Self.contacts(bob, .contacts(.add(alias: "alice", peer: aliceID, note: nil)))
        _ = try await Self.send(alice, to: bobID, "a contact now", wait: true)
        #expect(try await Self.inboxTexts(bob) == ["after unblocking", "a contact now"])
        // Blocking a contact by alias.
        _ = try await Self.contacts(bob, .contacts(.block(peer: "alice")))
        _ = try await Self.send(alice, to: bobID, "blocked contact")
        try await eventually("bob dropped the blocked contact's message") {
            bob.node.contactFilter.counters["dropped.blocked"] == 2
        }
        #expect(try await Self.inboxTexts(bob) == ["after unblocking", "a contact now"])
        try await alice.stop()
        try await bob.stop()
    }

    @Test(
        "a retry with the same message ID is idempotent; the same ID for another peer is refused with the ID; a malformed ID is refused"
    )
    func idempotentRetry() async throws {
        let yaml = Self.yaml(network: UUID().uuidString)
        let alice = try await RunningNode.start(yaml: yaml)
        let bob = try await RunningNode.start(yaml: yaml)
        defer {
            alice.directory.cleanUp()
            bob.directory.cleanUp()
        }
        try await eventually("alice has a link to bob") { !(await alice.node.router.peers().isEmpty) }
        let id = MessageID.random().hex
        let first = try await Self.send(alice, to: bob.node.peerID.hex, "once", wait: true, id: id)
        #expect(first.messageID.hex == id)
        let again = try await Self.send(alice, to: bob.node.peerID.hex, "once", id: id)
        #expect(again.messageID.hex == id)
        #expect(again.status == .delivered)
        #expect(TextReport.sent(again).contains("delivered already"))
        #expect(try await Self.inboxTexts(bob) == ["once"])

        let other = try await alice.client.call(
            .send(SendRequest(peer: NodeIdentity.generate().peerID.hex, text: "x", id: id))
        )
        #expect(other.code == MeshError.Code.invalidArgument.name)
        #expect(other.messageID?.hex == id)
        #expect(other.error?.contains(id) == true)
        let malformed = try await alice.client.call(.send(SendRequest(peer: bob.node.peerID.hex, text: "x", id: "xyz")))
        #expect(malformed.error?.contains("32 hex characters") == true, "\(malformed.line)")
        try await alice.stop()
        try await bob.stop()
    }

    @Test(
        "outbox and trace say what waits and why; a message past its expiry is marked expired with a reason and a retry with its ID queues it again"
    )
    func outboxTraceExpiry() async throws {
        let node = try await RunningNode.start(
            yaml: Self.yaml(network: UUID().uuidString, extra: "store: {maintenance_interval_seconds: 1}")
        )
        defer { node.directory.cleanUp() }
        // A real key that never comes online: with no direct link the message is sealed
        // end to end (a relay may carry it), yet the outbox counts the payload's bytes,
        // not the envelope's.
        let nobody = NodeIdentity.generate().peerID
        _ = try await Self.contacts(node, .contacts(.add(alias: "nobody", peer: nobody.hex, note: nil)))
        let waiting = try await Self.send(node, to: "nobody", "waits")
        let outbox = try await node.client.call(.outbox(MessageQuery())).decode(OutboxReply.self)
        #expect(outbox.total == 1)
        let entry = try #require(outbox.messages.first)
        #expect(outbox.totalBytes == 5 && entry.bytes == 5, "\(outbox.totalBytes) bytes waiting")
        #expect(entry.id == waiting.messageID)
        #expect(entry.alias == "nobody")
        #expect(entry.status == .queued)
        #expect(entry.expiresAt != nil)
        #expect(
            entry.waitingFor?.contains("a link to the peer: none is up (never tried)") == true,
            "\(entry.waitingFor ?? "")"
        )
        #expect(TextReport.outbox(outbox).contains("1 message on the way"))

        let trace = try await node.client.call(.trace(id: waiting.messageID.hex)).decode(TraceReply.self)
        #expect(trace.message.status == .queued)
        #expect(trace.trace.map(\.kind.name) == ["enqueued"])
        #expect(trace.peerConnected == false)
        let unknown = try await node.client.call(.trace(id: MessageID.random().hex))
        #expect(unknown.code == MeshError.Code.unknownMessage.name)
        #expect(unknown.messageID != nil)

        // Expiry: a short one of its own; the store's upkeep marks it expired.
        let short = try await node.client.call(
            NodeCommand.send(SendRequest(peer: nobody.hex, text: "short-lived", expiresSeconds: 0.2))
        ).decode(SendReply.self)
        try await eventually("the short-lived message expires", attempts: 1_500) {
            let trace = try await node.client.call(.trace(id: short.messageID.hex)).decode(TraceReply.self)
            return trace.message.status == .expired
        }
        let expired = try await node.client.call(.trace(id: short.messageID.hex)).decode(TraceReply.self)
        #expect(expired.message.reason?.contains("expired after") == true)
        #expect(expired.trace.last?.kind.name == "expired")
        #expect(TextReport.trace(expired).contains("expired"))
        let history = try await node.client.call(.history(MessageQuery())).decode(HistoryReply.self)
        #expect(history.outboundCounts == ["queued": 1, "expired": 1])
        // Sending again under the expired message's ID queues it again.
        let requeued = try await Self.send(node, to: nobody.hex, "short-lived", id: short.messageID.hex)
        #expect(requeued.status == .queued)
        #expect(try await node.client.call(.outbox(MessageQuery())).decode(OutboxReply.self).total == 2)
        try await node.stop()
    }
}
