import MeshCore
import MeshCrypto
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// Issue 41, finding 2: M, linked to the destination C, learns the ID of a message A
/// is about to send (relays and flood neighbours see IDs; `--id` makes them
/// predictable) and sends C a frame with that ID first. Duplicates are keyed on
/// (origin, ID), and an ID enters them only once its message or receipt verified, so
/// the genuine message is still delivered, exactly once.
@Suite struct IDSquattingTests {
    @Test(.timeLimit(.minutes(3))) func aForgedReceiptOrAnotherOriginsMessageDoesNotSquatAnID() async throws {
        let network = LoopbackNetwork()
        let a = try await MaliciousRelayTests.node("A", network: network)
        let c = try await MaliciousRelayTests.node("C", network: network)
        defer { for node in [a, c] { node.run.cancel() } }
        let received = MaliciousRelayTests.Received()
        let sink = Task {
            while let message = await c.router.incoming.receive() {
                received.ids.withLock { $0[message.from, default: []].append(message.id) }
            }
        }
        defer { sink.cancel() }

        let mallory = NodeIdentity.generate()
        let m = mallory.peerID
        let mTransport = LoopbackTransport(
            name: "lo",
            address: "M",
            network: network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(mTransport, localPeerID: m)
        defer { Task { await running.stop() } }
        var toC = try await MaliciousRelayTests.link(from: mTransport, as: m, to: "C")

        let first = MessageID.random()
        let second = MessageID.random()
        // An unsealed "receipt" claiming A's origin with the first ID (skips the
        // origin check of unsealed messages), and M's own, valid message with the
        // second ID.
        let junk: [UInt8] = Array(repeating: 7, count: 113)
        try await toC.send(
            .data(
                DataFrame.whole(
                    sequence: 1,
                    messageID: first,
                    origin: a.peer,
                    destination: c.peer,
                    flags: DataFrame.receiptFlag,
                    payload: junk
                )
            )
        )
        let own: [UInt8] = Array("M's own message".utf8)
        try await toC.send(
            .data(
                DataFrame.whole(sequence: 2, messageID: second, origin: m, destination: c.peer, payload: own)
            )
        )
        // C answers a PING only after it handled every frame before it on the link.
        try await toC.send(.ping(nonce: 41))
        _ = try await MaliciousRelayTests.next(from: &toC) { if case .pong(41) = $0 { true } else { nil } }
        try await eventually("C delivered M's own message", attempts: 1500) {
            received.ids.withLock { $0[m] ?? [] } == [second]
        }

        await a.router.connect(to: PeerHint(transport: "lo", address: "C"))
        for id in [first, second] {
            _ = try await a.router.send(to: c.peer, payload: Array("genuine".utf8), options: SendOptions(id: id))
        }
        try await eventually("C delivered both of A's messages", attempts: 1500) {
            Set(received.ids.withLock { $0[a.peer] ?? [] }) == [first, second]
        }
        try await eventually("A sees both delivered", attempts: 1500) {
            let statuses = [await a.router.status(of: first)?.status, await a.router.status(of: second)?.status]
            return statuses == [.delivered, .delivered]
        }
        #expect(received.ids.withLock { $0[a.peer]?.count } == 2)  // exactly once each
        for node in [a, c] { await node.router.shutdown() }
    }
}
