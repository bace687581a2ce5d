import Foundation
import MeshCore
import MeshTesting
import Testing

@testable import MeshStore

@Suite("Outbox uploads streamed into payload files")
struct OutboxUploadTests {
    @Test(
        "a staged upload is adopted as the message's payload file (no copy): it survives a reopen and is claimed byte for byte; an abandoned or dropped one leaves nothing"
    )
    func adoptsStagedUpload() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let files = path + "-payloads"
            let bob = PeerID.random()
            let payload = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 131) }
            let id = MessageID.random()
            try await withReopened(path) { store throws in
                let writer = try store.outbox.stagePayload()
                for start in stride(from: 0, to: payload.count, by: 65_536) {
                    try payload[start..<min(start + 65_536, payload.count)].withUnsafeBytes { try writer.append($0) }
                }
                let stored = try await writer.finish(contentDigest: [1, 2, 3])
                #expect(stored.byteCount == payload.count)
                let staged = try FileManager.default.contentsOfDirectory(atPath: files)
                #expect(staged.count == 1)
                try await store.outbox.enqueue(
                    OutboundMessage(
                        id: id,
                        destination: bob,
                        payload: [],
                        flags: 0,
                        contentDigest: stored.contentDigest
                    ),
                    stored: stored
                )
                // The same file, now named by the row: nothing was copied.
                #expect(try FileManager.default.contentsOfDirectory(atPath: files) == staged)
                #expect(try await store.outbox.pendingBytes == payload.count)
                #expect(await store.outbox.record(id)?.bytes == payload.count)
                #expect(await store.outbox.record(id)?.contentDigest == [1, 2, 3])

                // Cut short: abandoned, or dropped without finishing.
                let abandoned = try store.outbox.stagePayload()
                try [UInt8](repeating: 1, count: 10_000).withUnsafeBytes { try abandoned.append($0) }
                #expect(try FileManager.default.contentsOfDirectory(atPath: files).count == 2)
                abandoned.abandon()
                do {
                    let dropped = try store.outbox.stagePayload()
                    try [UInt8](repeating: 2, count: 10).withUnsafeBytes { try dropped.append($0) }
                }
                #expect(try FileManager.default.contentsOfDirectory(atPath: files) == staged)
            }
            try await withReopened(path) { store throws in
                #expect(try FileManager.default.contentsOfDirectory(atPath: files).count == 1)
                let claimed = await store.outbox.claim(id)
                #expect(claimed?.payload == payload)
                #expect(claimed?.contentDigest == [1, 2, 3])
                await store.outbox.update(id, to: .delivered, transport: "tcp", reason: nil)
                #expect(try FileManager.default.contentsOfDirectory(atPath: files).isEmpty)
            }
        }
    }

    @Test(
        "finish(digestingWith:) hashes the file while it syncs: the digest equals the bytes fed in order, across pieces of 1 MiB and an odd tail"
    )
    func digestWhileSyncingMatchesTheBytes() async throws {
        try await withStore { store throws in
            let payload = (0..<((3 << 20) + 12_345)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 7) }
            let writer = try store.outbox.stagePayload()
            for start in stride(from: 0, to: payload.count, by: 100_000) {
                try payload[start..<min(start + 100_000, payload.count)].withUnsafeBytes { try writer.append($0) }
            }
            let expected = RecordingDigester()
            payload.withUnsafeBytes { expected.update($0) }
            let stored = try await writer.finish(digestingWith: RecordingDigester())
            #expect(stored.byteCount == payload.count)
            #expect(stored.contentDigest == expected.finish())
            #expect(try await stored.bytes() == payload)
            // No digester: no digest, the file synced all the same.
            let plain = try store.outbox.stagePayload()
            try payload[0..<1000].withUnsafeBytes { try plain.append($0) }
            #expect(try await plain.finish(digestingWith: nil).contentDigest == [])
        }
    }

    @Test("a staged upload the outbox refuses (full) is removed, with the error naming the limit")
    func refusedUploadIsRemoved() async throws {
        var configuration = StoreConfiguration()
        configuration.outboxMaxBytesPerPeer = 100_000
        try await withStore(configuration: configuration) { store throws in
            let files = store.path + "-payloads"
            let writer = try store.outbox.stagePayload()
            try [UInt8](repeating: 5, count: 200_000).withUnsafeBytes { try writer.append($0) }
            let stored = try await writer.finish(contentDigest: [])
            let bob = PeerID.random()
            let error = await meshError {
                try await store.outbox.enqueue(
                    OutboundMessage(id: .random(), destination: bob, payload: [], flags: 0),
                    stored: stored
                )
            }
            #expect(error?.code == .storeFull)
            #expect(error?.message.contains("outboxMaxBytesPerPeer = 100000") == true)
            #expect(try FileManager.default.contentsOfDirectory(atPath: files).isEmpty)
            #expect(try await store.outbox.pendingCount == 0)
        }
    }
}

/// An order-sensitive digest (a running FNV-1a over every byte, and the byte count), so
/// a piece fed twice, skipped or out of order changes it.
private final class RecordingDigester: ContentDigester {
    private var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    private var count: UInt64 = 0

    func update(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        count += UInt64(bytes.count)
    }

    func finish() -> [UInt8] {
        withUnsafeBytes(of: hash.bigEndian, Array.init) + withUnsafeBytes(of: count.bigEndian, Array.init)
    }
}
