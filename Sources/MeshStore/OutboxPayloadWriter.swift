import Foundation
import Glibc
import MeshCore

/// Writes one large outbox payload into the payload directory while it arrives (a
/// client's upload), so that it is durable as soon as the upload ends instead of
/// being collected in memory and written after.
///
/// ```swift
/// let writer = try store.outbox.stagePayload()
/// for try await chunk in body { try chunk.withUnsafeReadableBytes { try writer.append($0) } }
/// let stored = try await writer.finish(contentDigest: digest)
/// try await router.send(to: peer, stored: stored)
/// ```
///
/// Until a row names it the file is an orphan: ``abandon()`` (or dropping an unfinished
/// writer) removes it, and one left by a crash is removed when the store is opened
/// next (``OutboxPayloadFiles/removeOrphans(keeping:)``). So a body cut short never
/// becomes a queued message.
public final class OutboxPayloadWriter {
    private let files: OutboxPayloadFiles
    /// The file's name within the payload directory.
    let name: String
    private var descriptor: Int32
    /// Bytes written so far.
    public private(set) var byteCount = 0
    /// Bytes written since the kernel was last asked to start writing them back.
    private var unflushed = 0
    private static let writebackStep = 2 << 20

    init(files: OutboxPayloadFiles) throws(MeshError) {
        self.files = files
        name = "upload-\(MessageID.random().hex)"
        descriptor = open(files.directory + "/" + name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw files.failure("create \(files.directory + "/" + name)", errno) }
    }

    deinit {
        abandon()
    }

    /// Appends `bytes` to the file (blocking on the page cache only: every few MiB the
    /// kernel is asked to start writing back what was written, so that
    /// ``finish(contentDigest:)``'s sync waits for little).
    /// - Throws: `.storeFailed` naming the file and the OS error (disk full); the
    ///   writer is then abandoned.
    public func append(_ bytes: UnsafeRawBufferPointer) throws(MeshError) {
        guard descriptor >= 0 else {
            throw MeshError(.storeFailed, "store: the payload upload \(name) was already finished or abandoned")
        }
        if let problem = OutboxPayloadFiles.writeAll(bytes, to: descriptor) {
            abandon()
            throw files.failure("write \(bytes.count) bytes to \(files.directory)/\(name)", problem)
        }
        byteCount += bytes.count
        unflushed += bytes.count
        if unflushed >= Self.writebackStep {
            // On Linux this starts writeback of the range's dirty pages without
            // waiting (pages still being written stay cached).
            _ = posix_fadvise(descriptor, off_t(byteCount - unflushed), off_t(unflushed), POSIX_FADV_DONTNEED)
            unflushed = 0
        }
    }

    /// Syncs the file and the directory (off the caller's thread) and returns the
    /// payload, ready for ``MeshCore/Router/send(to:stored:options:)``.
    /// - Parameter contentDigest: the digest of the bytes (``MeshCore/Router/makeContentDigester()``).
    /// - Throws: `.storeFailed`; nothing is left behind.
    public func finish(contentDigest: [UInt8]) async throws(MeshError) -> StagedOutboxPayload {
        guard descriptor >= 0 else {
            throw MeshError(.storeFailed, "store: the payload upload \(name) was already finished or abandoned")
        }
        let (descriptor, files, name) = (self.descriptor, self.files, self.name)
        self.descriptor = -1
        do {
            try await OutboxPayloadFiles.offThread { () throws(MeshError) in
                let synced = fsync(descriptor) == 0 ? nil : errno
                Glibc.close(descriptor)
                if let synced { throw files.failure("sync \(files.directory)/\(name)", synced) }
                try files.syncDirectory(files.directory)
            }
        } catch {
            unlink(files.directory + "/" + name)
            throw error
        }
        return StagedOutboxPayload(
            directory: files.directory,
            name: name,
            byteCount: byteCount,
            contentDigest: contentDigest
        )
    }

    /// Syncs the file and the directory like ``finish(contentDigest:)``, and computes the
    /// content digest meanwhile on a second thread, by reading the file back (from the
    /// page cache) into `digester` in pieces of 1 MiB. The sync mostly waits for the
    /// disk, so the hash costs the upload little wall time, where hashing each piece as
    /// it arrived put it on the upload's own path.
    /// - Parameter digester: a fresh digester (``MeshCore/Router/makeContentDigester()``);
    ///   nil for no digest (the payload is then hashed when it is sent).
    /// - Throws: `.storeFailed` naming the file and the OS error; nothing is left behind.
    public func finish(digestingWith digester: (any ContentDigester)?) async throws(MeshError) -> StagedOutboxPayload {
        guard let digester else { return try await finish(contentDigest: []) }
        guard descriptor >= 0 else {
            throw MeshError(.storeFailed, "store: the payload upload \(name) was already finished or abandoned")
        }
        let (files, path, byteCount) = (self.files, files.directory + "/" + name, self.byteCount)
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        guard reader >= 0 else {
            let problem = errno
            abandon()
            throw files.failure("open \(path) to hash it", problem)
        }
        // Only the digest below touches the digester until it is awaited.
        let box = UncheckedDigester(digester: digester)
        async let digest = Self.digest(reader, byteCount: byteCount, into: box, path: path, files: files)
        let staged: StagedOutboxPayload
        do {
            staged = try await finish(contentDigest: [])
        } catch {
            _ = await digest
            throw error
        }
        switch await digest {
        case .success(let contentDigest):
            return StagedOutboxPayload(
                directory: staged.directory,
                name: staged.name,
                byteCount: byteCount,
                contentDigest: contentDigest
            )
        case .failure(let error):
            staged.discard()
            throw error
        }
    }

    /// Feeds the file open at `reader` to the digester on a thread of its own, then
    /// closes `reader`.
    private static func digest(
        _ reader: Int32,
        byteCount: Int,
        into box: UncheckedDigester,
        path: String,
        files: OutboxPayloadFiles
    ) async -> Result<[UInt8], MeshError> {
        do throws(MeshError) {
            return .success(
                try await OutboxPayloadFiles.offThread { () throws(MeshError) in
                    defer { Glibc.close(reader) }
                    try feed(reader, byteCount: byteCount, to: box.digester, path: path, files: files)
                    return box.digester.finish()
                }
            )
        } catch {
            return .failure(error)
        }
    }

    /// Reads `byteCount` bytes from `descriptor` (from its start) into `digester`.
    private static func feed(
        _ descriptor: Int32,
        byteCount: Int,
        to digester: any ContentDigester,
        path: String,
        files: OutboxPayloadFiles
    ) throws(MeshError) {
        let pieceSize = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pieceSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset = 0
        while offset < byteCount {
            let count = pread(descriptor, buffer.baseAddress, min(pieceSize, byteCount - offset), off_t(offset))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                throw files.failure(
                    "read \(path) back to hash it (\(offset) of \(byteCount) bytes)",
                    count < 0 ? errno : EIO
                )
            }
            digester.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += count
        }
    }

    /// Closes and removes the file (the upload was cut short or refused). Harmless
    /// after ``finish(contentDigest:)`` or a first call.
    public func abandon() {
        guard descriptor >= 0 else { return }
        Glibc.close(descriptor)
        descriptor = -1
        unlink(files.directory + "/" + name)
    }
}

/// A payload written and synced by an ``OutboxPayloadWriter``: a file in the outbox's
/// payload directory that ``StoreOutbox/enqueue(_:stored:)`` adopts as the message's
/// payload file without copying it.
public struct StagedOutboxPayload: StoredPayload {
    /// The payload directory.
    let directory: String
    /// The file's name in it.
    let name: String
    /// The payload's size in bytes.
    public let byteCount: Int
    /// The content digest given to ``OutboxPayloadWriter/finish(contentDigest:)``.
    public let contentDigest: [UInt8]

    /// Reads the file.
    public func bytes() async throws -> [UInt8] {
        try OutboxPayloadFiles(directory: directory).read(name, bytes: byteCount)
    }

    /// Removes the file.
    public func discard() {
        unlink(directory + "/" + name)
    }
}

/// A digester handed to the one thread that feeds it while its owner waits.
private struct UncheckedDigester: @unchecked Sendable {
    let digester: any ContentDigester
}
