import Foundation
import Logging
import MeshCore

/// Where a node keeps its state: identity, control socket, and later its store.
public enum DataDirectory {
    /// The default data directory: `$SCMESH_DATA_DIR`, else `$XDG_DATA_HOME/scmesh`,
    /// else `~/.local/share/scmesh`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let explicit = environment["SCMESH_DATA_DIR"], !explicit.isEmpty {
            return explicit
        }
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            return (xdg as NSString).appendingPathComponent("scmesh")
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return (home as NSString).appendingPathComponent(".local/share/scmesh")
    }

    /// The control socket's path inside a data directory.
    public static func controlSocketPath(_ dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent("control.sock")
    }

    /// The longest Unix socket path SwiftNIO binds (`sun_path` less its own margin).
    public static let maximumSocketPathBytes = 103

    /// Refuses a data directory whose control socket path would be too long to bind,
    /// before anything is created in it (identity, store).
    /// - Throws: ``MeshError`` `.invalidConfiguration` naming both lengths.
    public static func requireSocketPathFits(_ dataDirectory: String) throws {
        let socket = controlSocketPath(dataDirectory)
        guard socket.utf8.count <= maximumSocketPathBytes else {
            let most = maximumSocketPathBytes - "/control.sock".utf8.count
            throw MeshError(
                .invalidConfiguration,
                "data directory \(dataDirectory) is \(dataDirectory.utf8.count) bytes long; its control socket path would be \(socket.utf8.count) bytes, more than the \(maximumSocketPathBytes) a Unix socket path may have: use a data directory path of at most \(most) bytes"
            )
        }
    }

    /// Creates the directory (and parents, mode 0700) when it does not exist. One that
    /// exists with access for group or others is set to 0700, with a warning: it holds
    /// the identity key, the API token and the control socket.
    /// - Throws: ``MeshError`` `.invalidConfiguration` when it cannot be created, is a
    ///   file, or is open to others and cannot be set to 0700.
    public static func prepare(_ path: String, logger: Logger? = nil) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw MeshError(.invalidConfiguration, "data directory \(path) is a file; pass another --data-dir")
            }
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & 0o077 != 0 else { return }
            let mode = String(info.st_mode & 0o777, radix: 8)
            guard chmod(path, 0o700) == 0 else {
                throw MeshError(
                    .invalidConfiguration,
                    "data directory \(path) has mode \(mode): group or others can read it, and it cannot be set to 0700 (\(String(cString: strerror(errno)).lowercased())); run chmod 700 \(path)"
                )
            }
            logger?.warning("data directory \(path) had mode \(mode) (group or others could read it); set it to 0700")
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: path,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw MeshError(
                .invalidConfiguration,
                "cannot create data directory \(path): \(error.localizedDescription)",
                cause: error
            )
        }
    }
}

/// An exclusive `flock` on `DATA-DIR/node.lock`, held while a node runs, so that two
/// nodes never share one data directory (and its identity) — even when the control
/// socket file was removed. The kernel releases the lock when the process dies, so a
/// killed node leaves nothing stale behind.
public final class DataDirectoryLock: Sendable {
    /// The lock file's name inside the data directory.
    public static let fileName = "node.lock"

    /// The lock file's path.
    public let path: String
    private let descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    /// Takes the lock (creating the directory and the file as needed) without waiting.
    /// - Throws: ``MeshError`` `.nodeAlreadyRunning` when another node holds it;
    ///   `.invalidConfiguration` when the file cannot be opened.
    public static func acquire(dataDirectory: String) throws -> DataDirectoryLock {
        try DataDirectory.prepare(dataDirectory)
        let path = (dataDirectory as NSString).appendingPathComponent(fileName)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno)).lowercased()
            throw MeshError(.invalidConfiguration, "cannot open \(path): \(reason)")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            if code == EWOULDBLOCK {
                throw MeshError(
                    .nodeAlreadyRunning,
                    "another node is running with data dir \(dataDirectory) (it holds \(path)); stop it, or pass another --data-dir"
                )
            }
            throw MeshError(
                .invalidConfiguration,
                "cannot lock \(path): \(String(cString: strerror(code)).lowercased())"
            )
        }
        // The holder's PID, for whoever wonders who holds it.
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return DataDirectoryLock(path: path, descriptor: descriptor)
    }

    deinit {
        close(descriptor)  // releases the flock
    }

    /// A `/proc` file read to its end (its size says 0, so a read by size gets a part).
    private static func readProcFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether a process holds the lock of `dataDirectory` now (a node is running or
    /// starting there). Read from `/proc/locks`, never by taking the lock: a probe
    /// that took it for a moment could make a starting node fail.
    public static func isHeld(dataDirectory: String) -> Bool {
        let path = (dataDirectory as NSString).appendingPathComponent(fileName)
        var info = stat()
        guard stat(path, &info) == 0, let locks = readProcFile("/proc/locks") else { return false }
        // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF": the device and inode last.
        let inode = ":\(info.st_ino)"
        return locks.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count >= 6 && fields[1] == "FLOCK" && fields[5].hasSuffix(inode)
        }
    }
}
