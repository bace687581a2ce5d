import Foundation
import MeshCore
import TransportMDNS

/// The discovery mode chosen at run time (`scmesh settings --discovery-mode`, `PATCH
/// /api/v1/settings`), kept in `DATA-DIR/discovery_mode` so that it survives a restart:
/// a node switched to `paranoid` must not announce itself again when it restarts.
///
/// The file holds one word (`normal`, `cautious` or `paranoid`) and a newline. While it
/// exists it overrides `discovery_mode` of every mDNS transport in the config; setting the
/// mode at run time rewrites it. Delete it to go back to the config's mode.
public enum SavedDiscoveryMode {
    /// The file's name inside the data directory.
    public static let fileName = "discovery_mode"

    /// The file's path for a data directory.
    public static func path(dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent(fileName)
    }

    /// The saved mode, or nil when none was saved.
    /// - Throws: ``MeshError`` `.invalidConfiguration` naming the file when it holds
    ///   anything but a mode, or cannot be read.
    public static func load(dataDirectory: String) throws -> MDNSTransport.DiscoveryMode? {
        let path = path(dataDirectory: dataDirectory)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw MeshError(.invalidConfiguration, "cannot read \(path): \(error.localizedDescription)", cause: error)
        }
        let word = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let mode = MDNSTransport.DiscoveryMode(rawValue: word) else {
            throw MeshError(
                .invalidConfiguration,
                "\(path) must hold normal, cautious or paranoid, got \"\(word.prefix(40))\"; fix it, or delete it to use the config's discovery_mode"
            )
        }
        return mode
    }

    /// Saves `mode` durably: written to a temporary file, synced, renamed over the old one.
    /// - Throws: ``MeshError`` `.invalidArgument` naming the file when it cannot be written.
    public static func save(_ mode: MDNSTransport.DiscoveryMode, dataDirectory: String) throws {
        let path = path(dataDirectory: dataDirectory)
        let temporary = path + ".tmp"
        let bytes = Array((mode.rawValue + "\n").utf8)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure(path, errno) }
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor)
        let code = errno
        close(descriptor)
        guard written == bytes.count, synced == 0 else {
            unlink(temporary)
            throw failure(path, code)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw failure(path, code)
        }
    }

    /// `configuration` with `mode` as the discovery mode of every mDNS transport.
    public static func applied(
        _ mode: MDNSTransport.DiscoveryMode,
        to configuration: NodeConfiguration
    ) -> NodeConfiguration {
        var result = configuration
        for (name, settings) in configuration.transports {
            guard var mdns = settings.configuration(as: MDNSTransport.Configuration.self) else { continue }
            mdns.discoveryMode = mode
            result.transports[name]?.configuration = mdns
        }
        return result
    }

    /// `configuration` with the saved mode (if any) applied: what a node starting on
    /// `dataDirectory` runs with.
    /// - Throws: as ``load(dataDirectory:)``.
    public static func applied(to configuration: NodeConfiguration, dataDirectory: String) throws -> NodeConfiguration {
        guard let mode = try load(dataDirectory: dataDirectory) else { return configuration }
        return applied(mode, to: configuration)
    }

    private static func failure(_ path: String, _ code: Int32) -> MeshError {
        MeshError(
            .invalidArgument,
            "cannot save the discovery mode to \(path): \(String(cString: strerror(code)).lowercased()); the mode was not changed"
        )
    }
}
