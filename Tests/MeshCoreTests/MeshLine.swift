import Logging
import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// A stand-in for MeshCrypto's envelope sealer: "sealing" wraps the payload with the
/// recipient's and the sender's peer IDs, so a relay carries bytes it does not open
/// and only the recipient, checking the sender, unwraps them. (The real sealer is
/// tested end to end in MeshCryptoTests.)
struct TestSealer: MessageSealer {
    static let magic: [UInt8] = Array("SEAL".utf8)
    let peer: PeerID

    var overhead: Int { Self.magic.count + 64 }

    func seal(_ payload: [UInt8], to recipient: PeerID) throws -> [UInt8] {
        Self.magic + recipient.bytes + peer.bytes + payload
    }

    func open(_ sealed: [UInt8], from origin: PeerID) throws -> [UInt8] {
        guard sealed.count >= overhead, Array(sealed.prefix(4)) == Self.magic else {
            throw MeshError(.malformedFrame, "not a test envelope")
        }
        guard Array(sealed[4..<36]) == peer.bytes else {
            throw MeshError(.invalidArgument, "sealed for another recipient")
        }
        guard Array(sealed[36..<68]) == origin.bytes else {
            throw MeshError(.invalidArgument, "sealed by another sender")
        }
        return Array(sealed[68...])
    }
}

/// Routers N0…N(n−1) over loopback links in a line, each dialling only its left
/// neighbour, with a signer (receipts, announcements) and a sealer each, and an inbox
/// collector per router.
final class MeshLine: Sendable {
    let network = LoopbackNetwork()
    let routers: [Router]
    private let inboxes: Inboxes
    private let tasks = Mutex<[Task<Void, Never>]>([])

    init(
        count: Int,
        relayOff: Set<Int> = [],
        clock: any MeshClock = SystemClock(),
        routing: RoutingConfiguration = .init(),
        keepalive: Duration = .seconds(30)
    ) async {
        var logger = Logger(label: "mesh-line")
        logger.logLevel = .warning
        var routers: [Router] = []
        for index in 0..<count {
            let id = PeerID.random()
            let configuration = RouterConfiguration(
                relayEnabled: !relayOff.contains(index),
                reconnect: ReconnectConfiguration(
                    initialDelay: .milliseconds(20),
                    maxDelay: .milliseconds(200),
                    jitter: 0.2
                ),
                keepaliveInterval: keepalive,
                routing: routing
            )
            let router = Router(
                security: PlaintextLinkSecurity(localPeerID: id),
                configuration: configuration,
                sealer: TestSealer(peer: id),
                receipts: TestReceiptSigner(peer: id),
                clock: clock,
                logger: logger
            )
            await router.add(
                LoopbackTransport(
                    name: "lo",
                    address: Self.address(index),
                    network: network,
                    configuration: .init(discovery: false)
                ),
                priority: 10
            )
            routers.append(router)
        }
        self.routers = routers
        inboxes = Inboxes(count: count)
        for (index, router) in routers.enumerated() {
            let inboxes = self.inboxes
            tasks.withLock {
                $0.append(Task { try? await router.run() })
                $0.append(
                    Task {
                        while let message = await router.incoming.receive() {
                            inboxes.messages.withLock { $0[index].append(message) }
                        }
                    }
                )
            }
            // Dial only once this router's transport (and so the left neighbour's, started
            // before) runs: a dial that fails first is retried on the router's clock,
            // which a test's ManualClock may never move (then the link never came up).
            for _ in 0..<2000 {
                if await router.transportStatus().first?.state == .running { break }
                try? await Task.sleep(for: .milliseconds(5))
            }
            if index > 0 { await router.connect(to: PeerHint(transport: "lo", address: Self.address(index - 1))) }
        }
    }

    static func address(_ index: Int) -> String { "N\(index)" }

    subscript(index: Int) -> Router { routers[index] }

    /// The messages router `index` received.
    func received(at index: Int) -> [InboundMessage] { inboxes.messages.withLock { $0[index] } }

    /// Polls `condition` until it holds, for at most `seconds`.
    func waitUntil(_ what: String, seconds: Double = hangGuardSeconds, _ condition: () async -> Bool) async throws {
        try await TestSupport.waitUntil(what, seconds: seconds, condition)
    }

    /// Waits until router `index` has a route to router `target`.
    func waitForRoute(from index: Int, to target: Int, hops: Int? = nil) async throws {
        let destination = routers[target].localPeerID
        try await waitUntil("N\(index) has a route to N\(target)") {
            guard let route = await routers[index].routes().first(where: { $0.destination == destination }) else {
                return false
            }
            return hops.map { route.hops == $0 } ?? true
        }
    }

    /// Waits until every neighbour pair has a live link.
    func waitForLinks() async throws {
        for index in 1..<routers.count {
            let left = routers[index - 1].localPeerID
            try await waitUntil("N\(index) is linked to N\(index - 1)") {
                await routers[index].peers().contains { $0.peer == left }
            }
        }
    }

    func stop() async {
        for router in routers { await router.shutdown() }
        for task in tasks.withLock({ $0 }) { await task.value }
    }
}

/// Each router's received messages.
final class Inboxes: Sendable {
    let messages: Mutex<[[InboundMessage]]>

    init(count: Int) {
        messages = Mutex(Array(repeating: [], count: count))
    }
}
