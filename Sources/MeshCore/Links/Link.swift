import Synchronization

/// One ordered, duplex pipe of frames to one remote endpoint.
///
/// ## Contract
/// - ``send(_:)`` suspends until the transport accepted the frame (back-pressure: a
///   slow remote slows the sender, nothing queues without bound). The router calls it
///   from one task at a time per link, so implementations need not order concurrent
///   sends. A frame larger than ``mtu`` throws `.frameTooLarge`. After ``close()`` or
///   a failure it throws `.linkClosed`.
/// - ``receive()`` returns the next inbound frame in the order the remote sent them,
///   `nil` once the remote closed cleanly or after ``close()``, and throws when the
///   link failed. It has one caller at a time (the router's reader).
/// - Frames keep their boundaries: one `send` on one end is one `receive` on the other.
///   The core never sends an empty frame (every packet starts with a flag byte), so a
///   packet medium may treat a zero-length read as end of stream.
/// - ``close()`` is idempotent, wakes a pending ``receive()`` (returning `nil`) and
///   makes the remote's ``receive()`` return `nil` soon after.
/// - ``preferredTaskExecutor`` (optional, nil by default) names the executor on which
///   the core runs the link's own tasks: the handshake, the reader, the control writer
///   and the ticker.
public protocol Link: Sendable {
    /// The remote's address in the transport's own notation (for logs and status).
    var remoteAddress: String { get }
    /// Largest frame ``send(_:)`` accepts.
    var mtu: Int { get }
    /// Sends one frame, suspending while the link applies back-pressure.
    func send(_ frame: [UInt8]) async throws
    /// The next inbound frame, or nil at end of stream.
    func receive() async throws -> [UInt8]?
    /// Closes the link. Idempotent.
    func close() async
    /// The executor the core should run this link's tasks on (its handshake, reader,
    /// control writer and ticker), or nil (the default) for Swift's global pool.
    ///
    /// Give one when the transport's readiness already has a thread of its own that can
    /// run tasks: a link whose ``receive()`` waits on an event loop (an epoll thread) and
    /// is resumed there by a `TaskExecutor` wakes one thread per packet, where a task on
    /// the global pool needs two (the loop's thread, then a pool thread). BLE returns
    /// its reactor thread (`BLETransport.linkExecutor`, switched by the `link_executor`
    /// key). The core hands the executor to `group.addTask(executorPreference:)`, so it
    /// is a preference: actor-isolated code still runs on its actor, and code the link
    /// tasks call on default actors (the router's) runs on this executor as well.
    ///
    /// Only return an executor that never blocks on its own work and serves many links
    /// (the router's per-frame work — decryption, reassembly, routing — runs there and
    /// delays its other jobs while it does). Leave it nil for links whose I/O completes
    /// elsewhere (NIO channels, in-process pipes): a preference there adds a hop.
    var preferredTaskExecutor: (any TaskExecutor)? { get }
}

extension Link {
    /// No preference: the link's tasks run on Swift's global pool.
    public var preferredTaskExecutor: (any TaskExecutor)? { nil }
}

extension Link {
    /// The inbound frames as an `AsyncSequence` (built on ``receive()``).
    public var inboundFrames: LinkFrames { LinkFrames(link: self) }
}

/// The inbound frames of a ``Link`` as an `AsyncSequence`.
public struct LinkFrames: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let link: any Link

    /// Iterates frames until the link ends.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let link: any Link
        public mutating func next() async throws -> [UInt8]? { try await link.receive() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(link: link) }
}

/// A process-unique link identifier. The core gives one to every link it uses;
/// transports may use them for their own bookkeeping too.
public struct LinkID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// The numeric value.
    public let rawValue: UInt64

    /// Wraps a numeric value (as decoded from an event or a snapshot).
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    private static let counter = Atomic<UInt64>(0)

    /// A fresh identifier, never handed out before in this process.
    public static func next() -> LinkID {
        LinkID(rawValue: counter.add(1, ordering: .relaxed).newValue)
    }

    public static func < (lhs: LinkID, rhs: LinkID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "link#\(rawValue)" }
}

/// Counters a link may keep about itself (a helper for transports; the core counts
/// on its own).
public struct LinkStats: Sendable, Hashable {
    /// Frames handed to the medium.
    public var framesSent: Int = 0
    /// Frames received from the medium.
    public var framesReceived: Int = 0
    /// Bytes handed to the medium (frame bytes, without the transport's own framing).
    public var bytesSent: Int = 0
    /// Bytes received from the medium.
    public var bytesReceived: Int = 0

    /// Zero counters.
    public init() {}

    /// Counts one sent frame.
    public mutating func recordSent(_ count: Int) {
        framesSent += 1
        bytesSent += count
    }

    /// Counts one received frame.
    public mutating func recordReceived(_ count: Int) {
        framesReceived += 1
        bytesReceived += count
    }
}
