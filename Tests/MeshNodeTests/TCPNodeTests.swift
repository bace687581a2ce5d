import Foundation
import MeshCore
import MeshNode
import MeshTesting
import Synchronization
import TestSupport
import Testing

// Node-level tests of the TCP transport (issue 4), on real sockets on loopback:
// two `scmesh run` processes that lose and regain each other, and hostile raw sockets
// against a node that keeps serving a well-behaved peer meanwhile.
//
// Nothing here asserts a time: every wait is a bounded poll with a generous limit.

@Suite("TCP nodes")
struct TCPNodeTests {
    /// Who has the other in `transports.tcp.bootstrap`.
    enum Dialer: String, CustomTestStringConvertible, CaseIterable {
        /// B (the receiver) bootstraps to A: a restarted B dials A as it starts.
        case receiver
        /// A (the sender) bootstraps to B: A redials B with backoff until B is back.
        case sender

        var testDescription: String { "\(rawValue) dials" }
    }

    @Test(
        "two scmesh processes over TCP: a message arrives; while the receiver is killed a send is queued (and --wait times out naming the message ID); after its restart the queued message arrives once",
        arguments: Dialer.allCases
    )
    func killAndRestartReceiver(dialer: Dialer) async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        let (portA, portB) = (try freeLoopbackPort(), try freeLoopbackPort())
        var argumentsA = ["--set", "transports.tcp.listen=127.0.0.1:\(portA)"]
        var argumentsB = ["--set", "transports.tcp.listen=127.0.0.1:\(portB)"]
        switch dialer {
        case .receiver: argumentsB += ["--set", "transports.tcp.bootstrap=127.0.0.1:\(portA)"]
        case .sender: argumentsA += ["--set", "transports.tcp.bootstrap=127.0.0.1:\(portB)"]
        }
        let nodeA = try await nodes.start("a", argumentsA)
        let nodeB = try await nodes.start("b", argumentsB)
        let (a, b, idA, idB) = (nodeA.dataDirectory, nodeB.dataDirectory, nodeA.peerID.hex, nodeB.peerID.hex)

        // 1. A message from A arrives in B's inbox.
        try await eventually("node A has a link to node B", attempts: 1500) {
            try await runScmesh(["peers", "--data-dir", a, "--full"], home: home).standardOutput.contains(idB)
        }
        let first = try await runScmesh(["send", "--data-dir", a, idB, "before the kill"], home: home)
        #expect(first.status == 0, "\(first.standardError)")
        try await eventually("the first message is in B's inbox", attempts: 1500) {
            try await inboxTexts(dataDirectory: b, home: home) == ["before the kill"]
        }
        let arrived = try await inbox(dataDirectory: b, home: home)
        #expect(arrived.first?["peer"] as? String == idA)
        #expect(arrived.first?["transport"] as? String == "tcp")

        // 2. SIGKILL B: no graceful goodbye, the kernel just closes its sockets.
        nodes.kill9(nodeB)
        try await eventually("node A sees the link to B gone", attempts: 1500) {
            let peers = try await runScmesh(["peers", "--data-dir", a, "--json"], home: home)
            return peers.status == 0 && !peers.standardOutput.contains(idB)
        }
        // While B is down a send is queued (store and forward) and prints the message ID.
        let whileDown = try await runScmesh(["send", "--data-dir", a, "--json", idB, "while B is down"], home: home)
        #expect(whileDown.status == 0, "\(whileDown.standardOutput) \(whileDown.standardError)")
        let queued = try jsonObject(whileDown.standardOutput)
        #expect(queued["status"] as? String == "queued", "\(whileDown.standardOutput)")
        let queuedID = try #require(queued["message_id"] as? String)
        // --wait gives up after its timeout; the error names the message ID and says it
        // stays queued; a retry with that ID is idempotent.
        let waited = try await runScmesh(["send", "--data-dir", a, "--timeout", "0.3", idB, "waited for"], home: home)
        #expect(waited.status == 1)
        #expect(waited.standardOutput.isEmpty)
        #expect(waited.standardError.hasPrefix("scmesh: message "), "\(waited.standardError)")
        #expect(waited.standardError.contains("stays in the outbox"), "\(waited.standardError)")
        #expect(waited.standardError.split(separator: "\n").count == 1, "\(waited.standardError)")
        let waitedJSON = try await runScmesh(
            ["send", "--data-dir", a, "--json", "--timeout", "0.3", "--id", queuedID, idB, "while B is down"],
            home: home
        )
        #expect(waitedJSON.status == 1)
        let timedOut = try jsonObject(waitedJSON.standardOutput)
        #expect(timedOut["code"] as? String == "timedOut", "\(waitedJSON.standardOutput)")
        #expect(timedOut["message_id"] as? String == queuedID)
        #expect((timedOut["message"] as? String)?.contains(queuedID) == true)
        let retry = try await runScmesh(
            ["send", "--data-dir", a, "--json", "--id", queuedID, idB, "while B is down"],
            home: home
        )
        #expect(try jsonObject(retry.standardOutput)["message_id"] as? String == queuedID)
        let outbox = try jsonObject(
            try await runScmesh(["outbox", "--data-dir", a, "--json"], home: home).standardOutput
        )
        #expect(outbox["total"] as? Int == 2, "\(outbox)")

        // 3. Restart B on the same data dir and port: the redial brings the link back
        //    and a new send arrives.
        try await nodes.restart(nodeB)
        try await eventually("node A has a link to the restarted node B", attempts: 1500) {
            try await runScmesh(["peers", "--data-dir", a, "--full"], home: home).standardOutput.contains(idB)
        }
        #expect(
            try await runScmesh(["identity", "--create", "--data-dir", b], home: home).standardOutput.contains(idB)
        )
        let second = try await runScmesh(["send", "--data-dir", a, idB, "after the restart"], home: home)
        #expect(second.status == 0, "\(second.standardError)")
        // The inbox is persisted: the first message survived the kill; the messages
        // queued while B was down arrived once each, whatever the retries.
        let expected = ["after the restart", "before the kill", "waited for", "while B is down"]
        try await eventually("every message is in the restarted B's inbox", attempts: 1500) {
            try await inboxTexts(dataDirectory: b, home: home).sorted() == expected
        }
        let history = try jsonObject(
            try await runScmesh(["history", "--data-dir", a, "--json"], home: home).standardOutput
        )
        #expect((history["messages"] as? [[String: Any]])?.count == 4)
        try await eventually("A's history shows every message delivered", attempts: 1500) {
            let reply = try jsonObject(
                try await runScmesh(["history", "--data-dir", a, "--json"], home: home).standardOutput
            )
            return (reply["outbound_counts"] as? [String: Int]) == ["delivered": 4]
        }

        #expect(try await nodes.terminate(nodeA) == 0)
        #expect(try await nodes.terminate(nodeB) == 0)
    }

    @Test("handshake_timeout_ms reaches the router; the default is the router's, below 1 is refused naming the key")
    func handshakeTimeoutKey() throws {
        let defaults = try NodeConfiguration.load(yaml: "", source: "test", environment: [:], registry: .builtIn)
        #expect(defaults.routerConfiguration.handshakeTimeout == RouterConfiguration().handshakeTimeout)
        #expect(try defaults.yaml().contains("handshake_timeout_ms: \(defaults.handshakeTimeoutMs)"))
        let short = try NodeConfiguration.load(
            yaml: "handshake_timeout_ms: 1500",
            source: "test",
            environment: [:],
            registry: .builtIn
        )
        #expect(short.routerConfiguration.handshakeTimeout == .milliseconds(1500))
        let flagged = try NodeConfiguration.load(
            yaml: "",
            source: "test",
            environment: ["SCMESH_HANDSHAKE_TIMEOUT_MS": "250"],
            overrides: [],
            registry: .builtIn
        )
        #expect(flagged.routerConfiguration.handshakeTimeout == .milliseconds(250))
        #expect {
            _ = try NodeConfiguration.load(
                yaml: "",
                source: "test",
                environment: [:],
                overrides: ["handshake_timeout_ms=0"],
                registry: .builtIn
            )
        } throws: { error in
            "\(error)".contains("handshake_timeout_ms")
        }
    }

    @Test(
        "hostile raw sockets (garbage, over-limit and 0xFFFFFFFF length prefixes, half a handshake then silence) are dropped while a good peer keeps exchanging messages"
    )
    func hostilePeers() async throws {
        // A small max_frame_size, so that an over-limit length prefix exists at all: the
        // prefix is two bytes, so 65,535 is the largest length a peer can announce.
        let failures = try await attackWhileServingGoodPeer(tcp: "max_frame_size: 4096") { port in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // (a) Garbage: plain text. Its first two bytes ("no" = 28,271) read as
                    // a length under 65,535 but over 4096: closed by the framing.
                    let socket = try RawTCPClient(port: port)
                    try socket.write(Array(String(repeating: "not a noise handshake! ", count: 200).utf8))
                    try await socket.awaitClosedByRemote("the garbage socket")
                }
                group.addTask {
                    // (a') Garbage inside valid TCP framing: a 5-byte frame whose first
                    // byte is no packet flag (docs/PROTOCOL.md A.1).
                    let socket = try RawTCPClient(port: port)
                    try socket.write([0, 5, 1, 2, 3, 4, 5])
                    try await socket.awaitClosedByRemote("the framed-garbage socket")
                }
                group.addTask {
                    // (a'') Garbage one layer deeper: a whole-segment packet (flag 0xC0)
                    // whose handshake message 1 has 5 bytes, not 32.
                    let socket = try RawTCPClient(port: port)
                    try socket.write([0, 6, 0xC0, 1, 2, 3, 4, 5])
                    try await socket.awaitClosedByRemote("the short-message-1 socket")
                }
                group.addTask {
                    // (b) A length prefix one over max_frame_size, then silence.
                    let socket = try RawTCPClient(port: port)
                    try socket.write([0x10, 0x01])
                    try await socket.awaitClosedByRemote("the over-limit prefix socket")
                }
                group.addTask {
                    // (b') A "4 GiB" prefix 0xFFFFFFFF. The prefix is two bytes, so the
                    // node reads 0xFFFF = 65,535, over this node's 4096 (for a node with
                    // the default max_frame_size see `fourGiBPrefixAtDefaultMaxFrameSize`).
                    let socket = try RawTCPClient(port: port)
                    try socket.write([0xFF, 0xFF, 0xFF, 0xFF])
                    try await socket.awaitClosedByRemote("the 0xFFFFFFFF prefix socket")
                }
                group.addTask {
                    // (c) A valid Noise XX message 1, then silence after the node's
                    // message 2: only the node's handshake_timeout_ms ends it.
                    let socket = try RawTCPClient(port: port)
                    try await socket.sendMessage1AndReadMessage2()
                    try await socket.awaitClosedByRemote("the half-handshake socket")
                }
                try await group.waitForAll()
            }
        }
        // Four refused by the framing (three over-limit prefixes, one bad packet flag),
        // one by the Noise handshake, and the half handshake by the router's timeout.
        #expect(failures == ["malformedFrame": 4, "malformedHandshake": 1, "handshakeFailed": 1])
    }

    @Test(
        "with the default max_frame_size a 0xFFFFFFFF prefix reads as a legal 65,535-byte length: silence after it ends at the handshake timeout, 65,535 garbage bytes after it are refused"
    )
    func fourGiBPrefixAtDefaultMaxFrameSize() async throws {
        let failures = try await attackWhileServingGoodPeer(tcp: "max_frame_size: 65535") { port in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let socket = try RawTCPClient(port: port)
                    try socket.write([0xFF, 0xFF, 0xFF, 0xFF])
                    try await socket.awaitClosedByRemote("the silent 0xFFFFFFFF prefix socket")
                }
                group.addTask {
                    // The frame completes: its first byte (0xFF, the prefix's third) is no
                    // packet flag.
                    let socket = try RawTCPClient(port: port)
                    try socket.write([0xFF, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0x5A, count: 65_533))
                    try await socket.awaitClosedByRemote("the 0xFFFFFFFF prefix socket that sends the whole frame")
                }
                try await group.waitForAll()
            }
        }
        #expect(failures == ["malformedFrame": 1, "handshakeFailed": 1])
    }

    @Test(
        "a flood of idle connections from the good peer's address: those over max_per_address are refused by TCP, the rest dropped at the handshake timeout, the good link keeps working and a new peer gets in afterwards"
    )
    func connectionFlood() async throws {
        let maxPerAddress = 4
        let flood = 12
        let failures = try await attackWhileServingGoodPeer(tcp: "max_per_address: \(maxPerAddress)") { port in
            // The good peer's link holds one of the slots for 127.0.0.1.
            var sockets: [RawTCPClient] = []
            for _ in 0..<flood { sockets.append(try RawTCPClient(port: port)) }
            for (index, socket) in sockets.enumerated() {
                try await socket.awaitClosedByRemote("flood connection \(index)")
            }
        }
        // Only the connections admitted under the limit reached the router, and each
        // ended at the handshake timeout; the others never became links.
        #expect(failures == ["handshakeFailed": maxPerAddress - 1])
    }
}

/// The YAML of a node under attack: TCP only on `port`, a short handshake timeout,
/// `tcp` extra keys for the TCP section.
private func targetYAML(port: Int, tcp: String) -> String {
    """
    relay: {enabled: true}
    handshake_timeout_ms: 2000
    transports:
      tcp: {enabled: true, listen: ["127.0.0.1:\(port)"], \(tcp)}
    """
}

/// The YAML of a well-behaved peer: dials the target, listens nowhere.
private func peerYAML(bootstrap port: Int) -> String {
    """
    relay: {enabled: true}
    transports:
      tcp: {enabled: true, listen: [], bootstrap: ["127.0.0.1:\(port)"]}
    """
}

/// Runs a target node (in process, TCP with the extra keys `tcp`) linked to a good peer,
/// and runs `attack` against the target's port while the good peer and the target keep
/// exchanging messages both ways. Then checks that every message arrived, that the target
/// still has exactly the good peer on the same link, and that a new peer can link to it.
/// - Returns: the handshake failures the attack caused, by reason.
private func attackWhileServingGoodPeer(
    tcp: String,
    sourceLocation: SourceLocation = #_sourceLocation,
    attack: @Sendable (Int) async throws -> Void
) async throws -> [String: Int] {
    let port = try freeLoopbackPort()
    let target = try await RunningNode.start(yaml: targetYAML(port: port, tcp: tcp))
    let peer = try await RunningNode.start(yaml: peerYAML(bootstrap: port))
    defer {
        // On success both are stopped below already; on a failure this ends them.
        for node in [target, peer] { node.task.cancel() }
        target.directory.cleanUp()
        peer.directory.cleanUp()
    }
    try await eventually(
        "the good peer and the target have a link to each other",
        attempts: 1500,
        fileID: sourceLocation.fileID,
        line: sourceLocation.line
    ) {
        let seenByPeer = try await peerIDs(of: peer)
        let seenByTarget = try await peerIDs(of: target)
        return seenByPeer == [target.node.peerID] && seenByTarget == [peer.node.peerID]
    }
    let goodLink = try #require(try await peers(of: target).first?.links.first, sourceLocation: sourceLocation)
    // Counters from here on are the attack's doing.
    let before = try await target.client.call(.status).decode(StatusReply.self).stats

    // The good peer and the target exchange messages, both ways, until told to stop.
    let stop = StopFlag()
    let traffic = Task { try await exchange(between: peer, and: target, until: stop) }
    defer { stop.set() }
    try await attack(port)
    stop.set()
    let (fromPeer, fromTarget) = try await traffic.value
    #expect(fromPeer.count >= 3 && fromTarget.count >= 3, sourceLocation: sourceLocation)

    // Every message of the good peer arrived, in order, and vice versa.
    try await eventually(
        "the target's inbox has every message of the good peer",
        attempts: 1500,
        fileID: sourceLocation.fileID,
        line: sourceLocation.line
    ) {
        try await inboxTexts(of: target) == fromPeer
    }
    try await eventually(
        "the good peer's inbox has every message of the target",
        attempts: 1500,
        fileID: sourceLocation.fileID,
        line: sourceLocation.line
    ) {
        try await inboxTexts(of: peer) == fromTarget
    }

    // The node is sane: one peer, on the same link as before, its transport running.
    let status = try await target.client.call(.status).decode(StatusReply.self)
    #expect(status.peerCount == 1, sourceLocation: sourceLocation)
    #expect(status.transports.map(\.name) == ["tcp"], sourceLocation: sourceLocation)
    #expect(status.transports.first?.state == .running, sourceLocation: sourceLocation)
    let after = status.stats
    #expect(after.linksClosed == before.linksClosed, sourceLocation: sourceLocation)
    #expect(after.linksOpened == before.linksOpened, sourceLocation: sourceLocation)
    #expect(after.messagesReceived - before.messagesReceived == fromPeer.count, sourceLocation: sourceLocation)
    let targetPeers = try await peers(of: target)
    #expect(targetPeers.map(\.peer) == [peer.node.peerID], sourceLocation: sourceLocation)
    #expect(targetPeers.first?.links.map(\.id) == [goodLink.id], sourceLocation: sourceLocation)
    var failures = after.handshakeFailuresByReason
    for (reason, count) in before.handshakeFailuresByReason { failures[reason, default: 0] -= count }
    failures = failures.filter { $0.value != 0 }
    #expect(
        after.handshakeFailures - before.handshakeFailures == failures.values.reduce(0, +),
        sourceLocation: sourceLocation
    )

    // And it still accepts a new well-behaved peer.
    let late = try await RunningNode.start(yaml: peerYAML(bootstrap: port))
    defer {
        late.task.cancel()
        late.directory.cleanUp()
    }
    try await eventually(
        "a new peer links to the target",
        attempts: 1500,
        fileID: sourceLocation.fileID,
        line: sourceLocation.line
    ) {
        try await peerIDs(of: late) == [target.node.peerID]
    }
    let reply = try await late.client.call(.send(SendRequest(peer: target.node.peerID.hex, text: "late")))
    #expect(reply.ok, "\(reply.line)", sourceLocation: sourceLocation)
    try await eventually(
        "the late peer's message arrives",
        attempts: 1500,
        fileID: sourceLocation.fileID,
        line: sourceLocation.line
    ) {
        try await inboxTexts(of: target).last == "late"
    }

    try await late.stop()
    try await peer.stop()
    try await target.stop()
    return failures
}

// MARK: - In-process helpers

/// A flag one task sets and another polls.
private final class StopFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

/// Sends numbered messages `a` -> `b` and `b` -> `a` alternately until `stop` is set
/// (at least three each way); every send must be delivered (its receipt back).
/// - Returns: the texts each side sent, in order.
private func exchange(
    between a: RunningNode,
    and b: RunningNode,
    until stop: StopFlag
) async throws -> (fromA: [String], fromB: [String]) {
    var fromA: [String] = []
    var fromB: [String] = []
    var round = 0
    while !stop.isSet || round < 3 {
        for (sender, receiver) in [(a, b), (b, a)] {
            let text = "\(sender.node.peerID.short) -> \(receiver.node.peerID.short) #\(round)"
            let reply = try await sender.client.call(
                NodeCommand.send(
                    SendRequest(peer: receiver.node.peerID.hex, text: text, wait: true, timeoutSeconds: 30)
                )
            )
            #expect(reply.ok, "send #\(round) failed: \(reply.line)")
            guard reply.ok else { return (fromA, fromB) }
            if sender.node.peerID == a.node.peerID { fromA.append(text) } else { fromB.append(text) }
        }
        round += 1
        try await Task.sleep(for: .milliseconds(20))
    }
    return (fromA, fromB)
}

private func peers(of node: RunningNode) async throws -> [PeerSnapshot] {
    try await node.client.call(.peers).decode(PeersReply.self).peers
}

private func peerIDs(of node: RunningNode) async throws -> [PeerID] {
    try await peers(of: node).map(\.peer)
}

private func inboxTexts(of node: RunningNode) async throws -> [String] {
    try await node.client.call(.inbox(InboxRequest())).decode(InboxReply.self).messages.compactMap(\.text)
}
