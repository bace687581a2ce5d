import Logging
import MeshCore
import MeshTesting
import Synchronization
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
        let link: (any Link)? = try await eventually("an inbound link") {
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

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Polls `check` until it returns a value (at most `seconds`).
func eventually<T>(_ what: String, seconds: Double = hangGuardSeconds, _ check: () throws -> T?) async throws -> T {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if let value = try check() { return value }
        try await Task.sleep(for: .milliseconds(5))
    }
    throw TimedOut(what: what)
}

/// How long ``within`` and ``eventually`` wait by default: a bound on a hang, not a
/// speed limit. Generous, because the suite runs its tests in parallel on two cores,
/// often beside builds, where tests that take milliseconds can take tens of seconds.
let hangGuardSeconds: Double = 60

/// Runs `body` with a deadline so a broken contract fails the test instead of hanging it.
func within<T: Sendable>(
    seconds: Double = hangGuardSeconds,
    _ what: String,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TimedOut(what: what)
        }
        return value
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

/// Ports handed out by ``freePort()``: below Linux's ephemeral range (32768–60999), so
/// no outgoing connection of a test running in parallel can take one between the moment
/// it is chosen and the moment a transport listens on it (again, after a restart).
private let nextPort = Atomic<Int>(Int.random(in: 0..<12_000))

/// A loopback TCP port nobody listens on now, from 20000–31999 (see `nextPort`).
func freePort() throws -> Int {
    for _ in 0..<12_000 {
        let port = 20_000 + nextPort.add(1, ordering: .relaxed).newValue % 12_000
        if try canBind(port) { return port }
    }
    throw TimedOut(what: "a free port in 20000-31999")
}

private func canBind(_ port: Int) throws -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TimedOut(what: "socket") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let length = socklen_t(MemoryLayout<sockaddr_in>.size)
    return withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 }
    }
}

/// A plain BSD socket client that misbehaves on purpose.
final class RawClient {
    let fd: Int32

    /// Connects to `127.0.0.1:port`; `receiveBuffer` sets `SO_RCVBUF` first (a small
    /// one makes a client that never reads back up the server's writes sooner).
    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            throw TimedOut(what: "raw connect to port \(port)")
        }
    }

    /// Writes `bytes`, blocking while the socket buffer is full: small writes only, or
    /// inside `onOwnThread` (MeshTesting), or the wait can starve the in-process server
    /// that must read them.
    func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// The client's own address as the server sees it, `"127.0.0.1:port"`.
    var localAddress: String {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return "127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
    }

    /// Shuts down the write side (the server sees EOF).
    func finishWriting() { shutdown(fd, Int32(SHUT_WR)) }

    /// Whether the server closed the connection within `seconds` (EOF or reset).
    func closedByServer(seconds: Double = 10) async -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 { return true }
            if count < 0 && errno != EAGAIN && errno != EWOULDBLOCK { return true }
            if count < 0 { try? await Task.sleep(for: .milliseconds(5)) }
        }
        return false
    }

    deinit { close(fd) }
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
