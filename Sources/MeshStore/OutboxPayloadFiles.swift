import Foundation
import Glibc
import MeshCore

/// Where the outbox keeps large payloads: one file each in a directory beside the
/// store file (`store.sqlite` → `store.sqlite-payloads/`), instead of a blob in
/// SQLite.
///
/// Why: SQLite writes a blob twice with WAL (into the WAL at commit, into the database
/// at the checkpoint, both synced with `synchronous = FULL`) and again when the row is
/// deleted, which makes queueing a large payload slow. A file is written once.
///
/// Durability is the same as a row's: ``write(_:for:)`` syncs the file and the
/// directory before the row that names it is committed, so once the enqueue returns
/// the payload survives a crash or power loss. A file is removed only after the
/// commit that deleted its row; a crash in between leaves a file no row names, which
/// ``removeOrphans(keeping:)`` deletes when the store is opened next.
struct OutboxPayloadFiles: Sendable {
    /// The directory (mode 0700).
    let directory: String

    /// The directory for the store file at `storePath`.
    init(storePath: String) {
        directory = storePath + "-payloads"
    }

    /// The payload directory `directory`.
    init(directory: String) {
        self.directory = directory
    }

    /// Creates the directory if needed (owner-only, as the store file).
    /// - Throws: `.storeFailed` naming the directory.
    func prepare() throws(MeshError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue {
            return
        }
        guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
            throw failure("create the payload directory", errno)
        }
        try syncDirectory((directory as NSString).deletingLastPathComponent)
    }

    /// Writes `payload` to a new file for message `id` and syncs it and the directory.
    /// Runs off the caller's thread (it blocks on the disk).
    /// - Parameter prefix: the start of the file's name (`inbox-` for a received payload).
    /// - Returns: the file's name within ``directory``.
    /// - Throws: `.storeFailed` naming the file and the OS error; nothing is left behind.
    func write(_ payload: [UInt8], for id: MessageID, prefix: String = "") async throws(MeshError) -> String {
        let name = "\(prefix)\(id.hex)-\(MessageID.random().hex.prefix(8))"
        let path = directory + "/" + name
        try await Self.offThread { () throws(MeshError) in try self.writeNow(payload, to: path) }
        return name
    }

    /// Runs blocking disk work (writes, syncs) on a dispatch thread, not the caller's.
    static func offThread<T: Sendable>(
        _ work: @escaping @Sendable () throws(MeshError) -> T
    ) async throws(MeshError) -> T {
        let result: Result<T, MeshError> = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(returning: Result(catching: work))
            }
        }
        return try result.get()
    }

    /// Writes all of `bytes` to `descriptor` (again after an interruption).
    /// - Returns: the OS error when a write failed, else nil.
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int32? {
        var written = 0
        while written < bytes.count {
            let count = Glibc.write(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if count < 0 {
                if errno == EINTR { continue }
                return errno
            }
            written += count
        }
        return nil
    }

    private func writeNow(_ payload: [UInt8], to path: String) throws(MeshError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure("create \(path)", errno) }
        var problem = payload.withUnsafeBytes { Self.writeAll($0, to: descriptor) }
        if problem == nil, fsync(descriptor) != 0 { problem = errno }
        Glibc.close(descriptor)
        if let problem {
            unlink(path)
            throw failure("write \(payload.count) bytes to \(path)", problem)
        }
        do {
            try syncDirectory(directory)
        } catch {
            unlink(path)
            throw error
        }
    }

    /// The payload in file `name`.
    /// - Throws: `.storeCorrupt` when the file is missing or shorter than `bytes`.
    func read(_ name: String, bytes: Int) throws(MeshError) -> [UInt8] {
        let path = directory + "/" + name
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MeshError(
                .storeCorrupt,
                "the payload file \(path) is missing or unreadable (\(String(cString: strerror(errno))))"
            )
        }
        guard data.count == bytes else {
            throw MeshError(
                .storeCorrupt,
                "the payload file \(path) holds \(data.count) bytes, its store row says \(bytes)"
            )
        }
        return Array(data)
    }

    /// Removes the files `names` (after the commit that deleted their rows).
    func remove(_ names: [String]) {
        for name in names { unlink(directory + "/" + name) }
    }

    /// Removes every file in the directory that no outbox or inbox row names (left by a crash
    /// between a file's write and its row's commit, or between a row's deletion and its
    /// file's removal). Returns how many.
    @discardableResult
    func removeOrphans(keeping names: Set<String>) -> Int {
        let present = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let orphans = present.filter { !names.contains($0) }
        remove(orphans)
        return orphans.count
    }

    func syncDirectory(_ path: String) throws(MeshError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("open directory \(path)", errno) }
        defer { Glibc.close(descriptor) }
        guard fsync(descriptor) == 0 else { throw failure("sync directory \(path)", errno) }
    }

    func failure(_ what: String, _ code: Int32) -> MeshError {
        MeshError(
            .storeFailed,
            "store: could not \(what): \(String(cString: strerror(code))); check the disk space and the data directory's permissions"
        )
    }
}
