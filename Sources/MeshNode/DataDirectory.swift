import Foundation
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

    /// Creates the directory (and parents, mode 0700) when it does not exist.
    /// - Throws: ``MeshError`` `.invalidConfiguration` when it cannot be created or is a file.
    public static func prepare(_ path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw MeshError(.invalidConfiguration, "data directory \(path) is a file; pass another --data-dir")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw MeshError(.invalidConfiguration, "cannot create data directory \(path): \(error.localizedDescription)", cause: error)
        }
    }
}
