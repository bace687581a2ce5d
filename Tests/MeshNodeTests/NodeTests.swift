import Foundation
import MeshCore
import MeshCrypto
import MeshNode
import MeshTesting
import TestSupport
import Testing

@Suite("Node")
struct NodeTests {
    static let twoLoopbacks = TransportRegistry([.loopback(), .loopback(name: "lo2", defaultPriority: 20)])

    /// Two loopback media (priorities 10 and 20) on a network private to one test.
    static func twoLoopbackYAML(network: String) -> String {
        """
        relay: {enabled: true}
        transports:
          loopback: {enabled: true, priority: 10, network: \(network)}
          lo2: {enabled: true, network: \(network)}
        """
    }

    @Test("buildNode makes every enabled transport with its priority and persists the identity")
    func buildWithTwoLoopbacks() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let config = try NodeConfiguration.load(
            yaml: Self.twoLoopbackYAML(network: UUID().uuidString),
            source: "test",
            registry: Self.twoLoopbacks
        )
        let node = try buildNode(config: config, dataDirectory: directory.path, registry: Self.twoLoopbacks)
        #expect(node.transports.map(\.transport.name) == ["loopback", "lo2"])
        #expect(node.transports.map(\.priority) == [10, 20])
        #expect(FileManager.default.fileExists(atPath: directory.file("identity.key")))

        let again = try buildNode(config: config, dataDirectory: directory.path, registry: Self.twoLoopbacks)
        #expect(again.peerID == node.peerID)
        #expect(try LocalIdentity.loadOrCreate(dataDirectory: directory.path).peerID == node.peerID)
    }

    @Test("creators racing on a new data directory all get the same peer ID")
    func identityCreationRace() async throws {
        for _ in 0..<20 {
            let directory = try TemporaryDirectory()
            defer { directory.cleanUp() }
            let ids = try await withThrowingTaskGroup(of: PeerID.self) { group in
                for _ in 0..<8 {
                    group.addTask { try LocalIdentity.loadOrCreate(dataDirectory: directory.path).peerID }
                }
                return try await group.reduce(into: Set<PeerID>()) { $0.insert($1) }
            }
            #expect(ids.count == 1)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["identity.key"])
        }
    }

    @Test("buildNode reports a corrupt identity file")
    func corruptIdentity() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        _ = FileManager.default.createFile(
            atPath: directory.file("identity.key"),
            contents: Data("not a key".utf8),
            attributes: [.posixPermissions: 0o600]
        )
        let config = try NodeConfiguration.load(yaml: "", source: "test", registry: .builtIn)
        #expect {
            _ = try buildNode(config: config, dataDirectory: directory.path, registry: .builtIn)
        } throws: { error in
            (error as? MeshError)?.message.contains("identity.key") == true
        }
    }

    @Test("control socket: status, peers, send and inbox between two in-process nodes")
    func controlRoundTrip() async throws {
        let yaml = Self.twoLoopbackYAML(network: UUID().uuidString)
        let alice = try await RunningNode.start(yaml: yaml, registry: Self.twoLoopbacks)
        let bob = try await RunningNode.start(yaml: yaml, registry: Self.twoLoopbacks)
        defer {
            alice.directory.cleanUp()
            bob.directory.cleanUp()
        }

        let status = try await alice.client.call(.status).decode(StatusReply.self)
        #expect(status.peerID == alice.node.peerID)
        #expect(status.relayEnabled)
        #expect(status.dataDir == alice.directory.path)
        #expect(status.transports.map(\.name) == ["loopback", "lo2"])

        try await eventually("alice has two links to bob") {
            let peers = try await alice.client.call(.peers).decode(PeersReply.self)
            return peers.peers.first { $0.peer == bob.node.peerID }?.links.count == 2
        }
        let peers = try await alice.client.call(.peers).decode(PeersReply.self)
        let links = try #require(peers.peers.first { $0.peer == bob.node.peerID }?.links)
        #expect(links.map(\.transport) == ["loopback", "lo2"])  // best (lowest priority) first

        let sent = try await alice.client.call(.send(SendRequest(peer: bob.node.peerID.hex, text: "hello bob")))
            .decode(SendReply.self)
        #expect(sent.peer == bob.node.peerID)
        #expect(sent.bytes == 9)
        let binary: [UInt8] = [0, 1, 2, 0xFF, 0xFE]
        _ = try await alice.client.call(
            NodeCommand.send(SendRequest(peer: bob.node.peerID.hex, payloadBase64: Data(binary).base64EncodedString()))
        ).decode(SendReply.self)

        try await eventually("bob's inbox has both messages") {
            try await bob.client.call(.inbox(InboxRequest())).decode(InboxReply.self).messages.count == 2
        }
        let inbox = try await bob.client.call(.inbox(InboxRequest())).decode(InboxReply.self)
        #expect(inbox.messages.map(\.seq) == [1, 2])
        #expect(inbox.messages[0].id == sent.messageID)
        #expect(inbox.messages[0].from == alice.node.peerID)
        #expect(inbox.messages[0].text == "hello bob")
        #expect(inbox.messages[0].transport == "loopback")
        #expect(inbox.messages[1].payloadBase64.flatMap { Data(base64Encoded: $0) }.map(Array.init) == binary)
        #expect(inbox.messages[1].text == nil)  // not UTF-8
        #expect(inbox.totalReceived == 2)

        let newer = try await bob.client.call(.inbox(InboxRequest(after: 1))).decode(InboxReply.self)
        #expect(newer.messages.map(\.seq) == [2])
        let bobStatus = try await bob.client.call(.status).decode(StatusReply.self)
        #expect(bobStatus.inboxCount == 2)
        #expect(bobStatus.stats.messagesReceived == 2)
        #expect(bobStatus.peerCount == 1)

        try await alice.stop()
        try await bob.stop()
    }

    @Test("the inbox is persisted: after a restart it still holds every message and sequence numbers go on")
    func inboxSurvivesRestart() async throws {
        let yaml = Self.twoLoopbackYAML(network: UUID().uuidString)
        let alice = try await RunningNode.start(yaml: yaml, registry: Self.twoLoopbacks)
        var bob = try await RunningNode.start(yaml: yaml, registry: Self.twoLoopbacks)
        let bobDirectory = bob.directory
        defer {
            alice.directory.cleanUp()
            bobDirectory.cleanUp()
        }
        func send(_ text: String) async throws {
            // Send queues; wait for the receipt, so the message is in bob's inbox before he stops.
            let reply = try await alice.client.call(
                .send(SendRequest(peer: bob.node.peerID.hex, text: text, wait: true))
            )
            #expect(try reply.decode(SendReply.self).status == .delivered, "\(reply.line)")
        }
        for text in ["one", "two", "three"] { try await send(text) }
        try await bob.stop()
        bob = try await RunningNode.start(yaml: yaml, registry: Self.twoLoopbacks, directory: bobDirectory)
        let kept = try await bob.client.call(.inbox(InboxRequest())).decode(InboxReply.self)
        #expect(kept.messages.map(\.text) == ["one", "two", "three"])
        #expect(kept.messages.map(\.seq) == [1, 2, 3])
        try await send("four")
        try await eventually("the new message arrived") {
            try await bob.client.call(.inbox(InboxRequest(after: 3))).decode(InboxReply.self).messages.count == 1
        }
        let after = try await bob.client.call(.inbox(InboxRequest(after: 3))).decode(InboxReply.self)
        #expect(after.messages.map(\.seq) == [4])  // never restarts at 1
        #expect(after.messages.map(\.text) == ["four"])
        #expect(after.totalReceived == 4)
        try await alice.stop()
        try await bob.stop()
    }

    @Test("nodes with MeshCrypto identities run Noise XX on their links and exchange messages")
    func cryptoIdentities() async throws {
        let yaml = "relay: {enabled: true}\ntransports:\n  loopback: {enabled: true, network: \(UUID().uuidString)}\n"
        let alice = try await RunningNode.start(yaml: yaml)
        let bob = try await RunningNode.start(yaml: yaml)
        defer {
            alice.directory.cleanUp()
            bob.directory.cleanUp()
        }
        #expect(FileManager.default.fileExists(atPath: alice.directory.file("identity.key")))
        // The same file gives the same peer ID.
        #expect(try LocalIdentity.loadOrCreate(dataDirectory: alice.directory.path).peerID == alice.node.peerID)

        try await eventually("alice has a link to bob") {
            try await alice.client.call(.peers).decode(PeersReply.self).peers
                .contains { $0.peer == bob.node.peerID }
        }
        _ = try await alice.client.call(.send(SendRequest(peer: bob.node.peerID.hex, text: "sealed hello")))
            .decode(SendReply.self)
        try await eventually("bob received it") {
            try await bob.client.call(.inbox(InboxRequest())).decode(InboxReply.self).messages
                .contains { $0.text == "sealed hello" && $0.from == alice.node.peerID }
        }
        let status = try await bob.client.call(.status).decode(StatusReply.self)
        #expect(status.stats.handshakeFailures == 0)
        try await alice.stop()
        try await bob.stop()
    }

    @Test("malformed control requests get an error reply and the node keeps serving")
    func malformedRequests() async throws {
        let node = try await RunningNode.start(yaml: "relay: {enabled: true}")
        defer { node.directory.cleanUp() }
        let valid = NodeIdentity.generate().peerID.hex
        let lines = [
            "hello",
            "{}",
            "[1, 2]",
            #"{"cmd": 5}"#,
            #"{"cmd": "fly"}"#,
            #"{"cmd": "send"}"#,
            #"{"cmd": "send", "peer": "zz", "text": "x"}"#,
            #"{"cmd": "send", "peer": "\#(valid)"}"#,
            #"{"cmd": "send", "peer": "\#(valid)", "text": "x", "payload_base64": "eA=="}"#,
            #"{"cmd": "send", "peer": "\#(valid)", "payload_base64": "!!not base64"}"#,
            "{\"cmd\": \"status\"",
            String(repeating: "\u{FFFD}", count: 100),
        ]
        for line in lines {
            let reply = try ControlReply(line: try await node.client.exchange(Array(line.utf8)))
            #expect(reply.ok == false, "\(line) -> \(reply.line)")
            #expect(reply.error?.isEmpty == false, "\(line) -> \(reply.line)")
            #expect(!reply.line.contains("\n"))
        }
        let unknown = try ControlReply(line: try await node.client.exchange(Array(#"{"cmd":"fly"}"#.utf8)))
        #expect(unknown.error?.contains("status, peers, routes, send, inbox") == true)
        // A peer with no route: queued (store and forward), not refused.
        let queued = try await node.client.call(.send(SendRequest(peer: valid, text: "x"))).decode(SendReply.self)
        #expect(queued.status == .queued)
        #expect(queued.peer.hex == valid)
        #expect(try await node.client.call(.status).ok)
        try await node.stop()
    }

    @Test("a stale socket file is replaced; a live node on the same data dir is refused")
    func socketOwnership() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        try makeStaleSocket(at: DataDirectory.controlSocketPath(directory.path))

        let first = try await RunningNode.start(yaml: "relay: {enabled: true}", directory: directory)
        let config = try NodeConfiguration.load(yaml: "", source: "test", registry: .builtIn)
        let second = try buildNode(config: config, dataDirectory: directory.path, registry: .builtIn)
        await #expect {
            try await second.run(handlingSignals: false)
        } throws: { error in
            guard let error = error as? MeshError else { return false }
            return error.code == .nodeAlreadyRunning
                && error.message.contains("another node is running with data dir \(directory.path)")
        }
        #expect(try await first.client.call(.status).ok)

        try await first.stop()
        #expect(!FileManager.default.fileExists(atPath: DataDirectory.controlSocketPath(directory.path)))
        await #expect {
            _ = try await first.client.call(.status)
        } throws: { error in
            guard let error = error as? MeshError else { return false }
            return error.code == .nodeNotRunning
                && error.message
                    == "no node is running with data dir \(directory.path) (start one with `scmesh run --data-dir \(directory.path)`)"
        }
    }
}

/// Leaves a socket file nobody listens on, as a killed node does.
private func makeStaleSocket(at path: String) throws {
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw MeshError(.invalidArgument, "socket failed") }
    defer { close(descriptor) }
    let result = withUnixSocketAddress(path) { bind(descriptor, $0, $1) }
    guard result == 0 else { throw MeshError(.invalidArgument, "bind failed: \(String(cString: strerror(errno)))") }
}
