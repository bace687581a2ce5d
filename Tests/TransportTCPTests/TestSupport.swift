import Logging
import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportTCP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Collects log messages so tests can check that a limit or a bad frame was logged.
final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])

    var messages: [String] { lines.withLock { $0 } }

    func append(_ line: String) { lines.withLock { $0.append(line) } }

    func logger(label: String = "test.tcp") -> Logger {
        Logger(label: label) { _ in CapturingHandler(capture: self) }
    }

    struct CapturingHandler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            capture.append("\(event.level): \(event.message)")
        }
    }
}

/// Reads a running transport's events in the background so a test can wait for them.
final class EventLog: Sendable {
    private let events = Mutex<[TransportEvent]>([])
    private let taken = Mutex(0)
    private let finished = Atomic<Bool>(false)

    init(_ running: RunningTransport) {
        let stream = running.events
        Task { [self] in
            for await event in stream {
                self.events.withLock { $0.append(event) }
            }
            self.finished.store(true, ordering: .sequentiallyConsistent)
        }
    }

    var isFinished: Bool { finished.load(ordering: .sequentiallyConsistent) }

    var inboundLinkCount: Int {
        events.withLock { $0.filter { if case .inboundLink = $0 { true } else { false } }.count }
    }

    var discovered: [PeerHint] {
        events.withLock {
            $0.compactMap { if case .peerDiscovered(let hint) = $0 { hint } else { nil } }
        }
    }

    /// The next inbound link not yet handed to the test, waiting up to 10 s.
    func nextInboundLink() async throws -> any Link {
        let link: (any Link)? = try await eventuallyValue("an inbound link") {
            events.withLock { events -> (any Link)? in
                let links = events.compactMap { event -> (any Link)? in
                    if case .inboundLink(let link) = event { return link }
                    return nil
                }
                return taken.withLock { taken in
                    guard taken < links.count else { return nil }
                    defer { taken += 1 }
                    return links[taken]
                }
            }
        }
        return try #require(link)
    }
}

/// A TCP transport whose `listen` runs in the background, with its events logged.
struct Listening {
    var transport: TCPTransport
    var running: RunningTransport
    var events: EventLog

    /// Starts `listen` and returns once it reported `.listening`.
    static func start(
        _ configuration: TCPTransport.Configuration,
        capture: LogCapture = LogCapture()
    ) async throws -> Listening {
        let transport = TCPTransport(configuration: configuration)
        let running = try await RunningTransport.start(transport, logger: capture.logger())
        return Listening(transport: transport, running: running, events: EventLog(running))
    }

    /// The first address of the `.listening` event.
    var address: String {
        get throws { try #require(running.addresses.first) }
    }

    /// The port of ``address``.
    var port: Int {
        get throws { try TCPAddress(address).port }
    }

    /// Dials `address` with this transport.
    func dial(_ address: String) async throws -> any Link {
        try await transport.dial(PeerHint(transport: "tcp", address: address))
    }

    /// Cancels `listen` and waits until it returned.
    func stop() async { await running.stop() }
}

/// A listening transport and a dialling one, linked once.
struct LinkedPair {
    var server: Listening
    var client: Listening
    var dialed: any Link
    var accepted: any Link

    var serverEvents: EventLog { server.events }

    static func make(
        server serverConfig: TCPTransport.Configuration = .init(listen: ["127.0.0.1:0"]),
        client clientConfig: TCPTransport.Configuration = .init(listen: []),
        capture: LogCapture = LogCapture()
    ) async throws -> LinkedPair {
        let server = try await Listening.start(serverConfig, capture: capture)
        let client = try await Listening.start(clientConfig, capture: capture)
        let dialed = try await client.dial(try server.address)
        let accepted = try await server.events.nextInboundLink()
        return LinkedPair(server: server, client: client, dialed: dialed, accepted: accepted)
    }

    func stop() async {
        await client.stop()
        await server.stop()
    }
}

/// Expects `body` to throw a MeshError with `code`.
func expectMeshError(
    _ code: MeshError.Code,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected MeshError \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as MeshError {
        #expect(error.code == code, "got \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected MeshError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}
