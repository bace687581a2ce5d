import Foundation
import MeshCore
import Testing

@testable import MeshCrypto

/// Hex helpers for tests (fixtures are hex).
func hex(_ string: String) -> [UInt8] {
    guard let bytes = Hex.decode(string) else { fatalError("bad hex in a test fixture: \(string)") }
    return bytes
}

/// One Noise test vector from `Fixtures/noise-25519-chachapoly.json` (cacophony format).
struct NoiseVector: Decodable, Sendable, CustomTestStringConvertible {
    struct Message: Decodable, Sendable {
        var payload: String
        var ciphertext: String
    }

    var protocol_name: String
    var init_prologue: String
    var init_ephemeral: String
    var init_static: String?
    var init_remote_static: String?
    var init_psks: [String]?
    var resp_prologue: String
    var resp_ephemeral: String?
    var resp_static: String?
    var resp_remote_static: String?
    var resp_psks: [String]?
    var handshake_hash: String
    var messages: [Message]

    var testDescription: String { protocol_name }

    static func all() throws -> [NoiseVector] {
        struct File: Decodable { var vectors: [NoiseVector] }
        guard
            let url = Bundle.module.url(
                forResource: "noise-25519-chachapoly",
                withExtension: "json",
                subdirectory: "Fixtures"
            )
        else {
            throw MeshError(
                .invalidArgument,
                "fixture Fixtures/noise-25519-chachapoly.json is missing from the test bundle"
            )
        }
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: url)).vectors
    }
}

/// An in-process pair of handshake channels built on AsyncStream: what one side sends,
/// the other receives, in order. Closing ends the peer's receive with `.linkClosed`.
final class StreamHandshakeChannel: HandshakeChannel {
    private let outbound: AsyncStream<[UInt8]>.Continuation
    private let inbound: AsyncStream<[UInt8]>
    /// Every message this side sent, for tests that tamper with a recording.
    let sent = Recorder()

    final class Recorder: @unchecked Sendable {
        // Guarded by `lock`; tests read it after the handshake finished.
        private let lock = NSLock()
        private var storage: [[UInt8]] = []
        func append(_ message: [UInt8]) { lock.withLock { storage.append(message) } }
        var messages: [[UInt8]] { lock.withLock { storage } }
    }

    private init(outbound: AsyncStream<[UInt8]>.Continuation, inbound: AsyncStream<[UInt8]>) {
        self.outbound = outbound
        self.inbound = inbound
    }

    /// Two connected ends.
    static func pair() -> (StreamHandshakeChannel, StreamHandshakeChannel) {
        let (aToB, aToBContinuation) = AsyncStream<[UInt8]>.makeStream()
        let (bToA, bToAContinuation) = AsyncStream<[UInt8]>.makeStream()
        return (
            StreamHandshakeChannel(outbound: aToBContinuation, inbound: bToA),
            StreamHandshakeChannel(outbound: bToAContinuation, inbound: aToB)
        )
    }

    func send(_ message: [UInt8]) async throws {
        sent.append(message)
        outbound.yield(message)
    }

    func receive() async throws -> [UInt8] {
        var iterator = inbound.makeAsyncIterator()
        guard let message = await iterator.next() else {
            throw MeshError(.linkClosed, "the in-test channel was closed")
        }
        return message
    }

    /// Ends this side: the peer's pending and later receives throw `.linkClosed`.
    func close() { outbound.finish() }
}

/// A channel that replays scripted inbound messages and records what is sent.
final class ScriptedHandshakeChannel: HandshakeChannel {
    private let script: Script

    final class Script: @unchecked Sendable {
        // Guarded by `lock`.
        private let lock = NSLock()
        private var inbound: [[UInt8]]
        private var outbound: [[UInt8]] = []
        init(_ inbound: [[UInt8]]) { self.inbound = inbound }
        func next() -> [UInt8]? { lock.withLock { inbound.isEmpty ? nil : inbound.removeFirst() } }
        func record(_ message: [UInt8]) { lock.withLock { outbound.append(message) } }
        var sent: [[UInt8]] { lock.withLock { outbound } }
    }

    init(inbound: [[UInt8]]) { script = Script(inbound) }

    var sent: [[UInt8]] { script.sent }

    func send(_ message: [UInt8]) async throws { script.record(message) }

    func receive() async throws -> [UInt8] {
        guard let message = script.next() else { throw MeshError(.linkClosed, "script exhausted") }
        return message
    }
}

/// A context for tests.
func testContext(expecting peer: PeerID? = nil) -> HandshakeContext {
    HandshakeContext(transportName: "test", remoteAddress: "in-process", expectedPeer: peer)
}

/// Runs both sides of a link handshake concurrently over an in-process channel pair.
func handshakePair(
    initiator: NoiseLinkSecurity,
    responder: NoiseLinkSecurity,
    expectedByInitiator: PeerID? = nil
) async -> (initiator: Result<SecureSession, any Error>, responder: Result<SecureSession, any Error>) {
    let (a, b) = StreamHandshakeChannel.pair()
    async let left: Result<SecureSession, any Error> = {
        defer { a.close() }
        do {
            return .success(
                try await initiator.handshake(
                    role: .initiator,
                    channel: a,
                    context: testContext(expecting: expectedByInitiator)
                )
            )
        } catch { return .failure(error) }
    }()
    async let right: Result<SecureSession, any Error> = {
        defer { b.close() }
        do {
            return .success(try await responder.handshake(role: .responder, channel: b, context: testContext()))
        } catch { return .failure(error) }
    }()
    return await (left, right)
}

extension Result {
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// The MeshError code of an error, or of its MeshError cause.
func codes(_ error: (any Error)?) -> [String] {
    guard let error = error as? MeshError else { return [] }
    return [error.code.name] + codes(error.cause)
}
