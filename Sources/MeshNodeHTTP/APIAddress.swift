import Foundation
import MeshNode

/// Where the running node's HTTP API listens, in `DATA-DIR/api.address` (one line,
/// `host:port`, the real port when `http.listen` asked for port 0): written when the
/// server listens, removed when it stops. Clients on this machine read it instead of
/// asking `status` over the control socket first (one round trip less per
/// `scmesh send -`).
public enum APIAddress {
    /// The address file of a data directory.
    public static func path(dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent("api.address")
    }

    /// Writes `address` (atomically: a reader never sees half a line).
    static func write(_ address: String, dataDirectory: String) {
        try? Data((address + "\n").utf8).write(
            to: URL(fileURLWithPath: path(dataDirectory: dataDirectory)),
            options: .atomic
        )
    }

    /// Removes the file (the server stopped, or does not run).
    static func remove(dataDirectory: String) {
        unlink(path(dataDirectory: dataDirectory))
    }

    /// The address in the file, or nil when there is none. It may be stale (a node
    /// killed with SIGKILL leaves it): use it only while the node's control socket
    /// answers.
    public static func read(dataDirectory: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path(dataDirectory: dataDirectory)) else { return nil }
        let address = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return address.isEmpty ? nil : address
    }
}
