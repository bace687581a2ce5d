import MeshCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads and writes `identity.key` with POSIX calls, so modes and atomicity are
/// exact: the file is created as a temporary with mode 0600, synced, then linked into
/// place (`link` fails if another process created the identity meanwhile, in which
/// case that one is loaded).
struct IdentityFile {
    static let magic: [UInt8] = Array("SCID".utf8)
    static let version: UInt8 = 1
    static let length = 4 + 1 + 32 + 32

    let directory: String
    var path: String { directory + "/" + NodeIdentity.fileName }

    func loadOrCreate() throws -> NodeIdentity {
        if let identity = try load() { return identity }
        try makeDirectory()
        let identity = NodeIdentity.generate()
        if try store(identity) { return identity }
        // Lost a race with another process creating the identity: use theirs.
        guard let existing = try load() else {
            throw MeshError(
                .identityFileIO,
                "identity file \(path) vanished while it was being created; start the node again"
            )
        }
        return existing
    }

    /// The identity in the file, or nil when the file does not exist.
    func load() throws -> NodeIdentity? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT { return nil }
            if code == ELOOP {
                throw MeshError(
                    .identityFileInsecure,
                    "identity file \(path) is a symbolic link; replace it with the real file (mode 0600)"
                )
            }
            throw ioError("cannot open identity file \(path)", code)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ioError("cannot stat identity file \(path)", errno) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw MeshError(
                .identityFileCorrupt,
                "identity file \(path) is not a regular file; move it away (a new identity is then created) or restore the right file"
            )
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw MeshError(
                .identityFileInsecure,
                "identity file \(path) has mode \(String(mode, radix: 8)) and is accessible to group or others, so its secret key may have leaked; run `chmod 600 \(path)` (and consider a new identity if others could read it)"
            )
        }
        var bytes = [UInt8](repeating: 0, count: 4096)
        defer { Sodium.wipe(&bytes) }
        var total = 0
        while total < bytes.count {
            let count = bytes.withUnsafeMutableBytes { raw in read(fd, raw.baseAddress! + total, raw.count - total) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ioError("cannot read identity file \(path)", errno)
            }
            if count == 0 { break }
            total += count
        }
        return try parse(Array(bytes[0..<total]))
    }

    func parse(_ contents: [UInt8]) throws -> NodeIdentity {
        var contents = contents
        defer { Sodium.wipe(&contents) }
        let repair = "restore it from a backup, or move it away to start as a new peer (a new peer ID)"
        guard contents.count == Self.length, Array(contents[0..<4]) == Self.magic else {
            throw MeshError(
                .identityFileCorrupt,
                "identity file \(path) is corrupt (\(contents.count) bytes, expected \(Self.length) starting with \"SCID\"); \(repair)"
            )
        }
        guard contents[4] == Self.version else {
            throw MeshError(
                .identityFileCorrupt,
                "identity file \(path) has version \(contents[4]); this build reads version \(Self.version); \(repair)"
            )
        }
        var seed = Array(contents[5..<37])
        defer { Sodium.wipe(&seed) }
        let identity = try NodeIdentity(seed: seed)
        guard identity.publicKey == Array(contents[37..<69]) else {
            throw MeshError(
                .identityFileCorrupt,
                "identity file \(path) is corrupt: its public key does not match its secret key; \(repair)"
            )
        }
        return identity
    }

    func encode(_ identity: NodeIdentity) -> [UInt8] {
        Self.magic + [Self.version] + identity.seed + identity.publicKey
    }

    /// Creates the data directory (and missing parents) with mode 0700.
    func makeDirectory() throws {
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw ioError("cannot create data directory \(prefix)", errno)
            }
        }
    }

    /// Writes the identity atomically; false when the file already existed.
    func store(_ identity: NodeIdentity) throws -> Bool {
        let temporary = directory + "/." + NodeIdentity.fileName + "." + Hex.encode(Sodium.randomBytes(6)) + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw ioError("cannot create \(temporary)", errno) }
        defer { unlink(temporary) }
        var contents = encode(identity)
        defer { Sodium.wipe(&contents) }
        var written = 0
        var failure: Int32 = 0
        while written < contents.count {
            let count = contents.withUnsafeBytes { raw in write(fd, raw.baseAddress! + written, raw.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            written += count
        }
        if failure == 0 && fchmod(fd, 0o600) != 0 { failure = errno }
        if failure == 0 && fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure != 0 { throw ioError("cannot write \(temporary)", failure) }
        if link(temporary, path) != 0 {
            if errno == EEXIST { return false }
            throw ioError("cannot move the new identity into \(path)", errno)
        }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
        return true
    }

    private func ioError(_ what: String, _ code: Int32) -> MeshError {
        let reason = String(cString: strerror(code))
        return MeshError(
            .identityFileIO,
            "\(what): \(reason) (errno \(code)); check the data directory's path and permissions"
        )
    }
}
