import Foundation
import MeshCore

/// The HTTP API's bearer token: 64 hex characters in `DATA-DIR/api.token` (mode 0600),
/// created at the node's first start. Whoever can read the file may use the API.
public enum APIToken {
    /// The token file of a data directory.
    public static func path(dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent("api.token")
    }

    /// Reads the token, creating the file with a new random token when there is none.
    /// The file is created with mode 0600 and `O_EXCL` in one step, so it is never
    /// readable by others, not even for a moment, and never replaces what is there.
    /// - Throws: `.invalidConfiguration` when the file cannot be written or holds no token.
    public static func loadOrCreate(dataDirectory: String) throws -> String {
        let path = path(dataDirectory: dataDirectory)
        if FileManager.default.fileExists(atPath: path) { return try load(dataDirectory: dataDirectory) }
        var generator = SystemRandomNumberGenerator()
        let token = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
        try? FileManager.default.createDirectory(
            atPath: dataDirectory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            // Another process created it first: use that one.
            if errno == EEXIST { return try load(dataDirectory: dataDirectory) }
            let reason = String(cString: strerror(errno)).lowercased()
            throw MeshError(
                .invalidConfiguration,
                "cannot write the HTTP API token to \(path) (\(reason)); check the data dir's permissions"
            )
        }
        defer { close(descriptor) }
        let bytes = Array((token + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(descriptor) == 0 else {
            unlink(path)
            throw MeshError(
                .invalidConfiguration,
                "cannot write the HTTP API token to \(path); check the data dir's permissions and free space"
            )
        }
        return token
    }

    /// Reads the token of a data directory.
    /// - Throws: `.invalidConfiguration` when the file is missing, unreadable or empty.
    public static func load(dataDirectory: String) throws -> String {
        let path = path(dataDirectory: dataDirectory)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MeshError(
                .invalidConfiguration,
                "cannot read the HTTP API token \(path): the node creates it at its first start with http.enabled on"
            )
        }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.count >= 32 else {
            throw MeshError(
                .invalidConfiguration,
                "\(path) holds no token (at least 32 characters); delete it and restart the node"
            )
        }
        return token
    }

    /// Compares two tokens in time independent of where they differ.
    static func matches(_ given: Substring, _ expected: String) -> Bool {
        let a = Array(given.utf8)
        let b = Array(expected.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
