#if canImport(CBlueZ)
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing
@testable import TransportBLE

/// A router serving BLE links (``SeqPacketLink`` over socketpairs, the same code as an
/// L2CAP channel) runs each link's reader on the reactor thread when the link asks for
/// it (`link_executor: reactor`): a message is delivered to the sink on that thread.
/// With `pool` it never is.
@Suite("Router links on the BLE reactor", .timeLimit(.minutes(3)))
struct ReactorLinkRouterTests {
    /// Joins two ``PairTransport``s: a dial hands the far end of a new socketpair to
    /// the other transport as an inbound link.
    final class PairNetwork: Sendable {
        let contexts = Mutex<[String: TransportContext]>([:])
    }

    /// A transport of `SeqPacketLink`s over `socketpair(AF_UNIX, SOCK_SEQPACKET)`.
    final class PairTransport: Transport {
        let address: String
        let peer: String
        let network: PairNetwork
        let runsOnReactor: Bool

        init(address: String, peer: String, network: PairNetwork, runsOnReactor: Bool) {
            self.address = address
            self.peer = peer
            self.network = network
            self.runsOnReactor = runsOnReactor
        }

        var name: String { "ble" }
        var capabilities: TransportCapabilities {
            TransportCapabilities(
                maxFrameSize: 512,
                nominalBitrate: 1_000_000,
                isReliable: true,
                needsDiscovery: true,
                powerCost: 2
            )
        }

        func listen(context: TransportContext) async throws {
            network.contexts.withLock { $0[address] = context }
            context.report(.listening(addresses: [address]))
            context.report(.peerDiscovered(PeerHint(transport: "ble", address: peer)))
            await waitUntilCancelled()
        }

        func dial(_ hint: PeerHint) async throws -> any Link {
            guard let remote = network.contexts.withLock({ $0[hint.address] }) else {
                throw MeshError(.dialFailed, "\(hint.address) does not listen")
            }
            var fds: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0
            else {
                throw SystemError("socketpair", errno: errno)
            }
            let local = try SeqPacketLink(
                adopting: fds[0],
                transportName: "ble",
                remoteAddress: hint.address,
                mtu: 512,
                receiveMTU: 512,
                runsOnReactor: runsOnReactor
            )
            let far = try SeqPacketLink(
                adopting: fds[1],
                transportName: "ble",
                remoteAddress: address,
                mtu: 512,
                receiveMTU: 512,
                runsOnReactor: runsOnReactor
            )
            remote.report(.inboundLink(far))
            return local
        }
    }

    /// A sink that notes, for every message, whether it was handed over on the reactor thread.
    final class ThreadNotingSink: MessageSink {
        let onReactor = Atomic<Int>(0)
        let elsewhere = Atomic<Int>(0)

        func accept(_ message: InboundMessage) async throws {
            if FDReactor.shared.isCurrentThread {
                onReactor.add(1, ordering: .relaxed)
            } else {
                elsewhere.add(1, ordering: .relaxed)
            }
        }
    }

    /// Sends 20 messages each way between two routers; returns both sinks.
    static func exchange(runsOnReactor: Bool) async throws -> [ThreadNotingSink] {
        var logger = Logger(label: "ble-test")
        logger.logLevel = .warning
        let network = PairNetwork()
        let sinks = [ThreadNotingSink(), ThreadNotingSink()]
        let routers = (0..<2).map { index in
            Router(security: PlaintextLinkSecurity(localPeerID: .random()), sink: sinks[index], logger: logger)
        }
        await routers[0].add(
            PairTransport(address: "a", peer: "b", network: network, runsOnReactor: runsOnReactor),
            priority: 20
        )
        await routers[1].add(
            PairTransport(address: "b", peer: "a", network: network, runsOnReactor: runsOnReactor),
            priority: 20
        )
        let runs = routers.map { router in Task { try? await router.run() } }
        defer { for run in runs { run.cancel() } }
        try await eventually("the routers have a link") {
            let zeroSeesOne = await routers[0].peers().contains { $0.peer == routers[1].localPeerID }
            let oneSeesZero = await routers[1].peers().contains { $0.peer == routers[0].localPeerID }
            return zeroSeesOne && oneSeesZero
        }
        for index in 0..<20 {
            let payload = [UInt8](repeating: UInt8(index), count: 1200)  // three packets
            try await routers[0].send(
                to: routers[1].localPeerID,
                payload: payload,
                waitUntil: .sent,
                timeout: .seconds(10)
            )
            try await routers[1].send(
                to: routers[0].localPeerID,
                payload: payload,
                waitUntil: .sent,
                timeout: .seconds(10)
            )
        }
        try await eventually("every message arrived") {
            sinks.allSatisfy { $0.onReactor.load(ordering: .relaxed) + $0.elsewhere.load(ordering: .relaxed) == 20 }
        }
        for router in routers { await router.shutdown() }
        for run in runs { await run.value }
        return sinks
    }

    @Test("with link_executor reactor, every message reaches the sink on the reactor thread")
    func onTheReactor() async throws {
        for sink in try await Self.exchange(runsOnReactor: true) {
            #expect(sink.onReactor.load(ordering: .relaxed) == 20)
            #expect(sink.elsewhere.load(ordering: .relaxed) == 0)
        }
    }

    @Test("with link_executor pool, none does")
    func onThePool() async throws {
        for sink in try await Self.exchange(runsOnReactor: false) {
            #expect(sink.onReactor.load(ordering: .relaxed) == 0)
            #expect(sink.elsewhere.load(ordering: .relaxed) == 20)
        }
    }

    @Test("link_executor decodes, defaults to reactor and refuses other values naming the key")
    func configuration() throws {
        #expect(BLETransport.Configuration().linkExecutor == .reactor)
        #expect(BLETransport(configuration: .init()).linkTaskExecutor != nil)
        let pool = try JSONDecoder().decode(
            BLETransport.Configuration.self,
            from: Data(#"{"link_executor":"pool"}"#.utf8)
        )
        #expect(pool.linkExecutor == .pool)
        #expect(BLETransport(configuration: pool).linkTaskExecutor == nil)
        do {
            _ = try JSONDecoder().decode(BLETransport.Configuration.self, from: Data(#"{"link_executor":"main"}"#.utf8))
            Issue.record("link_executor main accepted")
        } catch {
            #expect("\(error)".contains("link_executor: expected reactor or pool"), "\(error)")
        }
    }
}
#endif
