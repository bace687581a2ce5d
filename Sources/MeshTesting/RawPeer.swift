import MeshCore

/// A hand-driven peer for tests of hostile input: it speaks the wire protocol frame
/// by frame over one link (packet framing and reassembly included), so a test can
/// send what no honest router would — replays, altered envelopes, forged
/// announcements, floods — and read exactly what the router under test answers.
public struct RawPeer: Sendable {
    /// The link to the router under test.
    public let link: any Link
    private var reassembler = PacketReassembler()

    /// Wraps a link that is already open (dialled or accepted).
    public init(link: any Link) { self.link = link }

    /// Sends one segment, split into packets at the link's MTU.
    public func send(segment: [UInt8]) async throws {
        for packet in try PacketFramer.packets(for: segment, mtu: link.mtu) { try await link.send(packet) }
    }

    /// Sends one frame.
    package func send(_ frame: Frame) async throws {
        try await send(segment: frame.encoded())
    }

    /// Sends the plaintext handshake's hello (`PlaintextLinkSecurity`) claiming `id`.
    public func sendPlaintextHello(as id: PeerID) async throws {
        try await send(segment: Array("SCM0".utf8) + [Frame.version] + id.bytes)
    }

    /// The next segment, or nil when the router closed the link.
    public mutating func receiveSegment() async throws -> [UInt8]? {
        while let packet = try await link.receive() {
            if case .segment(let segment) = try reassembler.feed(packet) { return segment }
        }
        return nil
    }

    /// The next frame, or nil when the router closed the link.
    package mutating func receiveFrame() async throws -> Frame? {
        guard let segment = try await receiveSegment() else { return nil }
        return try Frame.decode(segment)
    }

    /// Reads frames until `match` returns a value for one (every other frame is
    /// dropped); nil when the router closed the link first.
    package mutating func next<T>(matching match: (Frame) -> T?) async throws -> T? {
        while let frame = try await receiveFrame() {
            if let found = match(frame) { return found }
        }
        return nil
    }

    /// The next ACK (every other frame is skipped).
    package mutating func receiveAck() async throws -> AckFrame? {
        while let segment = try await receiveSegment() {
            if case .ack(let ack) = try Frame.decode(segment) { return ack }
        }
        return nil
    }
}
