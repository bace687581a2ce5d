import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

@testable import MeshStore

/// The receiving side of the durable path: a link's reader hands each DATA frame to
/// delivery and reads on, so the inbox writes of frames that arrive while a commit runs
/// share the next one; each frame is acknowledged only once its own commit landed.
@Suite("Inbound commits")
struct InboundCommitTests {
    /// Router A (in-memory queue) linked over loopback to router B, whose sink and
    /// queue are `store`; no receipts, so A's message is delivered when B acknowledges
    /// its hop.
    final class Pair: Sendable {
        let a: Router
        let b: Router
        private let runs: Mutex<[Task<Void, Never>]>

        init(store: MeshStore, configuration: RouterConfiguration = RouterConfiguration()) async throws {
            var logger = Logger(label: "test")
            logger.logLevel = .warning
            let network = LoopbackNetwork()
            a = Router(
                security: PlaintextLinkSecurity(localPeerID: .random()),
                configuration: configuration,
                logger: logger
            )
            b = Router(
                security: PlaintextLinkSecurity(localPeerID: .random()),
                configuration: configuration,
                sink: store.inbox,
                queue: store.outbox,
                logger: logger
            )
            await a.add(LoopbackTransport(address: "A", network: network), priority: 10)
            await b.add(LoopbackTransport(address: "B", network: network), priority: 10)
            let (a, b) = (a, b)
            runs = Mutex([Task { try? await a.run() }, Task { try? await b.run() }])
            try await eventually("A has a link to B", attempts: 1000) {
                await a.peers().contains { $0.peer == b.localPeerID }
            }
        }

        /// Sends `count` messages from A to B at once; returns their IDs.
        func send(_ count: Int) async throws -> [MessageID] {
            let destination = b.localPeerID
            return try await withThrowingTaskGroup(of: MessageID.self) { group in
                for index in 0..<count {
                    group.addTask { try await self.a.send(to: destination, payload: Array("m\(index)".utf8)) }
                }
                var ids: [MessageID] = []
                for try await id in group { ids.append(id) }
                return ids
            }
        }

        func stop() async {
            await a.shutdown()
            await b.shutdown()
            for run in runs.withLock({ $0 }) { await run.value }
        }
    }

    @Test("frames read while the writer is busy wait together and share one commit; none is acknowledged before it")
    func framesOfOneLinkShareACommit() async throws {
        try await withStore { store throws in
            let pair = try await Pair(store: store)
            let count = 8
            let before = store.database.committer.counts
            let gate = GroupCommitTests.WriterGate(store)
            let ids = try await pair.send(count)
            // A reader that waited for each frame's commit would hand over one frame
            // and read no further until the writer is free.
            try await eventually("every frame's inbox write waits for the writer", attempts: 1000) {
                store.database.committer.waiting == count
            }
            for id in ids {
                #expect(await pair.a.status(of: id)?.status == .queued, "acknowledged before its commit")
            }
            gate.release()
            for id in ids {
                let record = try await pair.a.waitForStatus(of: id, until: .delivered, timeout: .seconds(30))
                #expect(record.status == .delivered)
            }
            let after = store.database.committer.counts
            #expect(after.transactions - before.transactions == 1)
            #expect(after.writes - before.writes == count)
            #expect(try await store.inbox.count == count)
            await pair.stop()
        }
    }

    @Test("a frame whose inbox write failed is not acknowledged: the sender retries it, and it is stored once")
    func failedCommitIsNotAcknowledged() async throws {
        try await withStore { store throws in
            let configuration = RouterConfiguration(
                escalation: EscalationConfiguration(
                    ackTimeoutMin: .milliseconds(100),
                    ackTimeoutMax: .milliseconds(500)
                ),
                reconnect: ReconnectConfiguration(initialDelay: .milliseconds(50), maxDelay: .milliseconds(200))
            )
            let pair = try await Pair(store: store, configuration: configuration)
            let count = 6
            let gate = GroupCommitTests.WriterGate(store)
            store.database.faults.crash(.inboxWrite)
            let ids = try await pair.send(count)
            try await eventually("every frame's inbox write waits for the writer", attempts: 1000) {
                store.database.committer.waiting == count
            }
            // One write of the shared commit fails; the others commit with it.
            gate.release()
            for id in ids {
                let record = try await pair.a.waitForStatus(of: id, until: .delivered, timeout: .seconds(30))
                #expect(record.status == .delivered)
            }
            #expect(try await store.inbox.count == count)
            #expect(await pair.b.stats().sinkRefusals == 1)
            #expect(await pair.a.stats().ackTimeouts >= 1, "the refused frame was not acknowledged: its send timed out")
            await pair.stop()
        }
    }

    /// Router R on `store` (its sink and queue), relaying within `limits`, and a raw
    /// neighbour X linked to it (plaintext hellos exchanged).
    struct Neighbour: Sendable {
        let r: Router
        let x: PeerID
        let transport: RunningTransport
        let run: Task<Void, Never>
        private let peerLink: any Link

        init(store: MeshStore, limits: RelayLimits = RelayLimits()) async throws {
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let network = LoopbackNetwork()
            let r = Router(
                security: PlaintextLinkSecurity(localPeerID: .random()),
                configuration: RouterConfiguration(
                    escalation: EscalationConfiguration(ackTimeoutMin: .seconds(20), ackTimeoutMax: .seconds(30)),
                    keepaliveInterval: .seconds(3600),
                    relayLimits: limits
                ),
                sink: store.inbox,
                queue: store.outbox,
                logger: logger
            )
            await r.add(
                LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
                priority: 10
            )
            run = Task { try? await r.run() }
            try await eventually("the transport runs") { await r.transportStatus().first?.state == .running }
            x = PeerID.random()
            let lo = LoopbackTransport(
                name: "lo",
                address: "X",
                network: network,
                configuration: .init(discovery: false)
            )
            transport = try await RunningTransport.start(lo, localPeerID: x)
            self.r = r
            peerLink = try await lo.dial(PeerHint(transport: "lo", address: "R"))
        }

        /// X's end of the link, after the hellos.
        func peer() async throws -> RawPeer {
            let peer = RawPeer(link: peerLink)
            try await peer.sendPlaintextHello(as: x)
            _ = try #require(try await peer.link.receive())  // R's hello
            return peer
        }

        /// A one-chunk DATA frame from X with hop sequence number `sequence`.
        func data(_ sequence: UInt32, origin: PeerID, to destination: PeerID, sealed: Bool) -> Frame {
            let body: [UInt8] = [0xE0, UInt8(truncatingIfNeeded: sequence)]
            return .data(
                DataFrame.whole(
                    sequence: sequence,
                    origin: origin,
                    destination: destination,
                    flags: sealed ? DataFrame.sealedFlag : 0,
                    payload: body
                )
            )
        }

        func stop() async {
            await transport.stop()
            await r.shutdown()
            await run.value
        }
    }

    @Test("relay deliveries decided together take a neighbour's share of N exactly N times")
    func overlappedRelaysSpendTheShareOnce() async throws {
        try await withStore { store throws in
            // 40 an hour for the node, a quarter (10) for any one neighbour.
            let neighbour = try await Neighbour(store: store, limits: RelayLimits(maxPerHour: 40, neighbourShare: 0.25))
            let (r, peer) = (neighbour.r, try await neighbour.peer())

            // X offers 30 sealed messages for a node nobody knows while R's writer is
            // held: every delivery is decided before any custody commit lands.
            let (origin, nowhere, count) = (PeerID.random(), PeerID.random(), 30)
            let gate = GroupCommitTests.WriterGate(store)
            for index in 0..<count {
                try await peer.send(neighbour.data(UInt32(index + 1), origin: origin, to: nowhere, sealed: true))
            }
            try await eventually("every offer is refused or waits for the writer", attempts: 2000) {
                let refused = await r.stats().relayRefused.values.reduce(0, +)
                return refused + store.database.committer.waiting >= count
            }
            gate.release()
            try await eventually("every offer is decided", attempts: 2000) {
                let stats = await r.stats()
                return stats.relayAccepted + stats.relayRefused.values.reduce(0, +) == count
            }
            let stats = await r.stats()
            #expect(stats.relayAccepted == 10)
            #expect(stats.relayRefused == ["neighbourShare": 20], "\(stats.relayRefused)")
            #expect(try await store.outbox.pendingCount == 10)
            await neighbour.stop()
        }
    }

    @Test("a PING is answered only after the DATA frames before it were decided")
    func pongFollowsTheCommitsBeforeIt() async throws {
        try await withStore { store throws in
            let neighbour = try await Neighbour(store: store)
            var peer = try await neighbour.peer()
            let gate = GroupCommitTests.WriterGate(store)
            for sequence: UInt32 in 1...3 {
                try await peer.send(
                    neighbour.data(sequence, origin: neighbour.x, to: neighbour.r.localPeerID, sealed: false)
                )
            }
            try await eventually("the three inbox writes wait for the writer", attempts: 2000) {
                store.database.committer.waiting >= 3
            }
            try await peer.send(.ping(nonce: 7))
            gate.release()
            // The ACK for all three comes no later than the PONG: a PONG sent while the
            // commits waited would come first.
            var acked: UInt32 = 0
            let pong = try await peer.next { frame -> Bool? in
                switch frame {
                case .ack(let ack):
                    acked = max(acked, ack.cumulative)
                    return nil
                case .pong(let nonce): return nonce == 7
                default: return nil
                }
            }
            #expect(pong == true)
            #expect(acked == 3, "the PONG came before the frames ahead of it were acknowledged")
            #expect(try await store.inbox.count == 3)
            await neighbour.stop()
        }
    }
}
