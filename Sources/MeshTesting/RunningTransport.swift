import Logging
import MeshCore

/// A transport running outside a router: its ``Transport/listen(context:)`` in a task
/// of its own and its events as a stream. For tests and tools that drive a transport
/// directly; a router runs its transports itself.
///
/// ```swift
/// let running = try await RunningTransport.start(tcp)
/// let link = try await tcp.dial(hint)
/// for await event in running.events { ... }
/// await running.stop()
/// ```
public final class RunningTransport: Sendable {
    /// The transport.
    public let transport: any Transport
    /// Every event the transport reported, `.listening` included; finishes when
    /// `listen` returns.
    public let events: AsyncStream<TransportEvent>
    /// The addresses of the first `.listening` event.
    public let addresses: [String]
    private let task: Task<Void, any Error>

    private init(
        transport: any Transport,
        events: AsyncStream<TransportEvent>,
        addresses: [String],
        task: Task<Void, any Error>
    ) {
        self.transport = transport
        self.events = events
        self.addresses = addresses
        self.task = task
    }

    /// Calls `listen` in a new task and returns once the transport reported that it
    /// listens.
    /// - Throws: what `listen` threw before it was ready (e.g. `.transportUnavailable`).
    public static func start(
        _ transport: any Transport,
        localPeerID: PeerID = .random(),
        logger: Logger = RunningTransport.quietLogger
    ) async throws -> RunningTransport {
        let (events, continuation) = AsyncStream.makeStream(of: TransportEvent.self)
        let readyStream = AsyncStream.makeStream(
            of: Result<[String], any Error>.self,
            bufferingPolicy: .bufferingOldest(1)
        )
        let context = TransportContext(localPeerID: localPeerID, logger: logger) { event in
            if case .listening(let addresses) = event { readyStream.continuation.yield(.success(addresses)) }
            continuation.yield(event)
        }
        let task = Task {
            defer { continuation.finish() }
            do {
                try await transport.listen(context: context)
                readyStream.continuation.yield(
                    .failure(MeshError(.notRunning, "\(transport.name): listen returned before it listened"))
                )
            } catch {
                readyStream.continuation.yield(.failure(error))
                throw error
            }
        }
        var iterator = readyStream.stream.makeAsyncIterator()
        guard let first = await iterator.next() else {
            throw MeshError(.notRunning, "\(transport.name) did not start")
        }
        switch first {
        case .success(let addresses):
            return RunningTransport(transport: transport, events: events, addresses: addresses, task: task)
        case .failure(let error):
            task.cancel()
            throw error
        }
    }

    /// Cancels `listen` and waits until the transport closed its listener and links.
    public func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    /// A logger that prints warnings and worse.
    public static var quietLogger: Logger {
        var logger = Logger(label: "transport")
        logger.logLevel = .warning
        return logger
    }
}
