import Dispatch
import Foundation
import MeshCore
import TestSupport
import Testing

@testable import MeshStore

/// Kill -9 with a real process: a child (this test binary, running only
/// ``childWriter()``) accepts inbound messages and enqueues + claims outbound ones as
/// fast as it can, printing each ID once the call returned; the parent kills it in the
/// middle and reopens the file.
@Suite("Crash safety (kill -9 of a writing process)")
struct CrashSafetyTests {
    static let childVariable = "MESHSTORE_CRASH_CHILD_STORE"

    @Test("what a call acknowledged survives kill -9; a re-sent copy is not stored twice; claimed messages are queued")
    func killDuringWrites() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let printed = try await Self.runChildAndKill(storePath: path, afterLines: 200)
            let inbound = printed.filter { $0.hasPrefix("in ") }.compactMap { MessageID(hex: String($0.dropFirst(3))) }
            let claimed = printed.filter { $0.hasPrefix("out ") }.compactMap { MessageID(hex: String($0.dropFirst(4))) }
            #expect(inbound.count + claimed.count == printed.count)
            #expect(inbound.count >= 50)

            try await withReopened(path) { store throws in
                let stored = try await store.inbox.entries()
                let storedIDs = Set(stored.map(\.message.id))
                // Every message whose accept returned (so the hop would have been
                // acknowledged) is there; at most one more was committed unprinted.
                #expect(Set(inbound).isSubset(of: storedIDs))
                #expect(stored.count <= inbound.count + 1)
                #expect(stored.map(\.sequence) == Array(1..<(stored.count + 1)))
                // The sender retries the messages whose ack it did not see: no second copy.
                for entry in stored { try await store.inbox.accept(entry.message) }
                #expect(try await store.inbox.count == stored.count)

                // Every printed claim was cut by the kill: claims live in memory, so all
                // are simply queued, and no attempt was written for them.
                #expect(store.requeuedAtOpen.isEmpty)
                for id in claimed {
                    #expect(await store.outbox.record(id)?.status == .queued)
                    #expect(try await store.history.trace(of: id).map(\.kind) == [.enqueued])
                }
            }
        }
    }

    /// The child's body: runs only when the parent starts this binary with the variable
    /// set (skipped in a normal test run). Never returns: it is killed.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[childVariable] != nil))
    func childWriter() async throws {
        let path = try #require(ProcessInfo.processInfo.environment[Self.childVariable])
        let store = try MeshStore(path: path)
        let sender = PeerID.random()
        let destination = PeerID.random()
        while true {
            let message = InboundMessage(
                id: .random(),
                from: sender,
                payload: Array(repeating: 1, count: 200),
                transport: "tcp"
            )
            try await store.inbox.accept(message)
            Self.emit("in \(message.id.hex)")
            let outgoing = OutboundMessage(id: .random(), destination: destination, payload: [1, 2, 3], flags: 0)
            try await store.outbox.enqueue(outgoing)
            guard await store.outbox.claim(outgoing.id) != nil else { continue }
            Self.emit("out \(outgoing.id.hex)")
        }
    }

    private static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Starts this test binary running only ``childWriter()``, reads its output until it
    /// printed `afterLines` IDs, kills it with SIGKILL and returns the ID lines it printed.
    static func runChildAndKill(storePath: String, afterLines: Int) async throws -> [String] {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var environment = ProcessInfo.processInfo.environment
        environment[childVariable] = storePath
        let output = Pipe()
        let child = try ChildProcess(
            executable: executable,
            arguments: ["--testing-library", "swift-testing", "--filter", "childWriter"],
            environment: environment,
            standardOutput: .pipe(output)
        )
        let pid = child.processIdentifier
        // Blocking reads on a dispatch thread, not on the cooperative pool.
        let text: String = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var data = Data()
                while true {
                    let chunk = output.fileHandleForReading.availableData
                    data.append(chunk)
                    let lines = data.split(separator: UInt8(ascii: "\n")).filter {
                        $0.starts(with: Array("in ".utf8)) || $0.starts(with: Array("out ".utf8))
                    }
                    if chunk.isEmpty || lines.count >= afterLines {
                        kill(pid, SIGKILL)
                        // Whatever the child wrote before it died.
                        data.append(output.fileHandleForReading.readDataToEndOfFile())
                        continuation.resume(returning: String(decoding: data, as: UTF8.self))
                        return
                    }
                }
            }
        }
        child.waitUntilExit()
        #expect(child.terminationReason == .uncaughtSignal)
        // A partial last line (cut by the kill) is not an acknowledged ID.
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if !text.hasSuffix("\n") { lines.removeLast() }
        return lines.filter { $0.hasPrefix("in ") || $0.hasPrefix("out ") }
    }
}
