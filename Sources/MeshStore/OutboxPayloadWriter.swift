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
        guard descriptor >= 0 else { throw MeshError(.storeFailed, "store: the payload upload \(name) was already finished or abandoned") }
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
        guard descriptor >= 0 else { throw MeshError(.storeFailed, "store: the payload upload \(name) was already finished or abandoned") }
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
        return StagedOutboxPayload(directory: files.directory, name: name, byteCount: byteCount, contentDigest: contentDigest)
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
