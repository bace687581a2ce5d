import Foundation
import MeshCore
import Synchronization
import TestSupport
import Testing

@testable import MeshStore

/// A wall clock the test moves by hand.
final class TestClock: Sendable {
    private let date: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        date = Mutex(start)
    }

    var now: Date { date.withLock { $0 } }

    /// The closure a store reads.
    var read: @Sendable () -> Date { { self.now } }

    func advance(by seconds: TimeInterval) {
        date.withLock { $0 += seconds }
    }
}

/// A fresh temporary directory (``TemporaryDirectory``), removed afterwards.
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let directory = try TemporaryDirectory(prefix: "meshstore")
    defer { directory.cleanUp() }
    return try await body(directory.path)
}

/// A store in a fresh temporary directory, closed and removed afterwards.
func withStore<T>(
    configuration: StoreConfiguration = StoreConfiguration(),
    clock: TestClock = TestClock(),
    _ body: (MeshStore) async throws -> T
) async throws -> T {
    try await withTemporaryDirectory { directory throws in
        let store = try MeshStore(path: directory + "/store.sqlite", configuration: configuration, clock: clock.read)
        defer { try? store.close() }
        return try await body(store)
    }
}

/// Opens the store at `path`, runs `body`, closes it: one "run" of a node.
func withReopened<T>(
    _ path: String,
    configuration: StoreConfiguration = StoreConfiguration(),
    clock: TestClock = TestClock(),
    _ body: (MeshStore) async throws -> T
) async throws -> T {
    let store = try MeshStore(path: path, configuration: configuration, clock: clock.read)
    defer { try? store.close() }
    return try await body(store)
}

func message(from peer: PeerID, _ text: String, transport: String = "tcp") -> InboundMessage {
    InboundMessage(id: .random(), from: peer, payload: Array(text.utf8), transport: transport)
}

func outbound(to peer: PeerID, bytes: Int = 4, flags: UInt16 = 0) -> OutboundMessage {
    OutboundMessage(
        id: .random(),
        destination: peer,
        payload: (0..<bytes).map { UInt8(truncatingIfNeeded: $0) },
        flags: flags
    )
}

/// The error `body` threw, as a MeshError (records an issue when it threw nothing or
/// something else).
func meshError(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> MeshError? {
    do {
        try await body()
        Issue.record("expected a MeshError, nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as MeshError {
        return error
    } catch {
        Issue.record("expected a MeshError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

func fileBytes(_ path: String) -> Data? {
    FileManager.default.contents(atPath: path)
}
