import Foundation
import MeshCore
import Testing

@testable import MeshStore

@Suite("Dedup log")
struct DedupLogTests {
    @Test("received IDs persist and are pruned after the retention")
    func persistenceAndPruning() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let clock = TestClock()
            let old = MessageID.random()
            let recent = MessageID.random()
            let alice = PeerID.random()
            try await withReopened(path, clock: clock) { store throws in
                #expect(try await store.dedup.insert(old, from: alice))
                #expect(try await store.dedup.insert(old, from: alice) == false)
                clock.advance(by: 5 * 86_400)
                #expect(try await store.dedup.insert(recent, from: alice))
            }
            try await withReopened(path, clock: clock) { store throws in
                #expect(try await store.dedup.contains(old, from: alice))
                #expect(try await store.dedup.contains(recent, from: alice))
                // Default retention: 7 days of expiry + 1 day of clock skew.
                clock.advance(by: 3 * 86_400 - 1)
                #expect(try await store.dedup.prune() == 0)
                clock.advance(by: 2)
                #expect(try await store.dedup.prune() == 1)
                #expect(try await store.dedup.contains(old, from: alice) == false)
                #expect(try await store.dedup.contains(recent, from: alice))
                #expect(try await store.dedup.count == 1)
            }
        }
    }

    @Test("an ID is a duplicate only from the origin that used it")
    func keyedOnOrigin() async throws {
        try await withStore { store throws in
            let (alice, mallory) = (PeerID.random(), PeerID.random())
            let id = MessageID.random()
            #expect(try await store.dedup.insert(id, from: mallory))
            #expect(try await store.dedup.contains(id, from: alice) == false)
            #expect(try await store.dedup.insert(id, from: alice))
            #expect(try await store.dedup.insert(id, from: alice) == false)
            // Both origins' messages with one ID land in the inbox, each once.
            let other = MessageID.random()
            try await store.inbox.accept(InboundMessage(id: other, from: mallory, payload: [3], transport: "lo"))
            try await store.inbox.accept(InboundMessage(id: other, from: alice, payload: [4], transport: "lo"))
            try await store.inbox.accept(InboundMessage(id: other, from: alice, payload: [4], transport: "lo"))
            #expect(try await store.inbox.entries().map(\.message.payload) == [[3], [4]])
        }
    }

    @Test("the retention is configurable")
    func configurableRetention() async throws {
        let clock = TestClock()
        var configuration = StoreConfiguration()
        configuration.defaultExpiry = .seconds(30)
        configuration.dedupRetention = .seconds(60)
        try await withStore(configuration: configuration, clock: clock) { store throws in
            try await store.dedup.insert(.random(), from: .random())
            #expect(try await store.dedup.prune(now: clock.now + 61) == 1)
        }
    }
}

@Suite("Contacts")
struct ContactsTests {
    @Test("add, look up by alias (any case) or peer, list, remove")
    func basics() async throws {
        try await withStore { store throws in
            let bob = PeerID.random()
            let carol = PeerID.random()
            try await store.contacts.add(peer: bob, alias: "Bob", note: "met at the market")
            try await store.contacts.add(peer: carol, alias: "  carol ")
            #expect(try await store.contacts.contact(alias: "bob")?.peer == bob)
            #expect(try await store.contacts.contact(alias: "CAROL")?.peer == carol)
            #expect(try await store.contacts.contact(peer: bob)?.note == "met at the market")
            #expect(try await store.contacts.contact(peer: carol)?.alias == "carol")
            #expect(try await store.contacts.all().map(\.alias) == ["Bob", "carol"])
            #expect(try await store.contacts.remove(peer: bob))
            #expect(try await store.contacts.remove(peer: bob) == false)
            #expect(try await store.contacts.contact(alias: "Bob") == nil)
        }
    }

    @Test("an alias belongs to one peer")
    func aliasUniqueness() async throws {
        try await withStore { store throws in
            let bob = PeerID.random()
            let impostor = PeerID.random()
            try await store.contacts.add(peer: bob, alias: "bob")
            var error = await meshError { try await store.contacts.add(peer: impostor, alias: "BOB") }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("already taken by peer \(bob.hex)") == true)
            error = await meshError { try await store.contacts.add(peer: bob, alias: "robert") }
            #expect(error?.message.contains("already a contact") == true)
            // Renaming keeps the peer and its addedAt.
            var contact = try #require(try await store.contacts.contact(peer: bob))
            contact.alias = "robert"
            try await store.contacts.save(contact)
            #expect(try await store.contacts.contact(alias: "bob") == nil)
            #expect(try await store.contacts.contact(alias: "robert")?.addedAt == contact.addedAt)
            try await store.contacts.add(peer: impostor, alias: "bob")
        }
    }

    @Test(
        "malformed aliases are refused",
        arguments: ["", "   ", String(repeating: "x", count: 65), PeerID.random().hex]
    )
    func malformedAlias(alias: String) async throws {
        try await withStore { store throws in
            let error = await meshError { try await store.contacts.add(peer: .random(), alias: alias) }
            #expect(error?.code == .invalidArgument)
        }
    }

    @Test("blocked flag and allow-list mode persist")
    func blockedAndAllowList() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let bob = PeerID.random()
            try await withReopened(path) { store throws in
                #expect(try await store.contacts.allowListOnly() == false)
                try await store.contacts.add(peer: bob, alias: "bob")
                try await store.contacts.setBlocked(true, peer: bob)
                try await store.contacts.setAllowListOnly(true)
                let error = await meshError { try await store.contacts.setBlocked(true, peer: .random()) }
                #expect(error?.message.contains("is not a contact") == true)
            }
            try await withReopened(path) { store throws in
                #expect(try await store.contacts.contact(peer: bob)?.blocked == true)
                #expect(try await store.contacts.allowListOnly())
                try await store.contacts.setAllowListOnly(false)
                #expect(try await store.contacts.allowListOnly() == false)
            }
        }
    }
}

@Suite("Address ledger")
struct AddressLedgerTests {
    @Test("addresses come best first: latest success, then fewest failures")
    func ordering() async throws {
        let clock = TestClock()
        try await withStore(clock: clock) { store throws in
            let bob = PeerID.random()
            let ledger = store.ledger
            try await ledger.recordSuccess(peer: bob, transport: "tcp", address: "10.0.0.1:7420")
            clock.advance(by: 60)
            try await ledger.recordSuccess(peer: bob, transport: "mdns", address: "192.168.1.5:40000")
            try await ledger.recordFailure(peer: bob, transport: "tcp", address: "10.0.0.1:7420")
            try await ledger.recordFailure(peer: bob, transport: "tcp", address: "203.0.113.9:7420")
            try await ledger.recordFailure(peer: bob, transport: "tcp", address: "203.0.113.9:7420")
            try await ledger.recordFailure(peer: bob, transport: "tcp", address: "198.51.100.7:7420")
            try await ledger.recordSeen(peer: bob, transport: "ble", address: "AA:BB:CC:DD:EE:FF")
            try await ledger.recordSuccess(peer: .random(), transport: "tcp", address: "10.9.9.9:1")

            let all = try await ledger.addresses(for: bob)
            #expect(
                all.map(\.address) == [
                    "192.168.1.5:40000", "10.0.0.1:7420", "AA:BB:CC:DD:EE:FF", "198.51.100.7:7420", "203.0.113.9:7420",
                ]
            )
            let first = try #require(all.first { $0.address == "10.0.0.1:7420" })
            #expect(first.successes == 1)
            #expect(first.failures == 1)
            #expect(first.lastSuccess == clock.now - 60)
            #expect(first.lastFailure == clock.now)
            #expect(first.lastSeen == clock.now)
            #expect(try await ledger.addresses(for: bob, transport: "tcp").count == 3)

            // A newer success moves an address to the front.
            clock.advance(by: 1)
            try await ledger.recordSuccess(peer: bob, transport: "tcp", address: "203.0.113.9:7420")
            #expect(try await ledger.addresses(for: bob).first?.address == "203.0.113.9:7420")
            #expect(try await ledger.remove(peer: bob, transport: "ble", address: "AA:BB:CC:DD:EE:FF"))
            #expect(try await ledger.addresses(for: bob).count == 4)
        }
    }

    @Test("the name each peer claimed is kept across a reopen, replaced, forgotten, the newest first within the limit")
    func names() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let clock = TestClock()
            let (alice, bob, carol) = (PeerID.random(), PeerID.random(), PeerID.random())
            try await withReopened(path, clock: clock) { store throws in
                try await store.ledger.recordName("Alice laptop", of: alice)
                clock.advance(by: 1)
                try await store.ledger.recordName("bob", of: bob)
                clock.advance(by: 1)
                try await store.ledger.recordName("carol", of: carol)
                try await store.ledger.recordName("Alice desktop", of: alice)
            }
            try await withReopened(path, clock: clock) { store throws in
                #expect(
                    try await store.ledger.names() == [alice: "Alice desktop", bob: "bob", carol: "carol"]
                )
                #expect(try await store.ledger.names(limit: 2) == [alice: "Alice desktop", carol: "carol"])
                // A handshake without a name forgets the one kept.
                try await store.ledger.recordName(nil, of: bob)
                #expect(try await store.ledger.names()[bob] == nil)
            }
        }
    }
}
