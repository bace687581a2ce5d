import Foundation
import MeshCore
import MeshNode
import TestSupport
import Testing

@testable import MeshNodeHTTP

/// The secrets in a data directory are never open to other users, not even for a
/// moment: watched with inotify, which reports every change the kernel made.
@Suite("File permissions")
struct FilePermissionTests {
    /// The inotify events (name, mask) seen in `directory` while `body` ran.
    static func events(in directory: String, during body: () throws -> Void) throws -> [(name: String, mask: UInt32)] {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { throw MeshError(.invalidArgument, "inotify_init1 failed") }
        defer { close(descriptor) }
        let all = UInt32(IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_CLOSE_WRITE | IN_MODIFY)
        guard inotify_add_watch(descriptor, directory, all) >= 0 else {
            throw MeshError(.invalidArgument, "inotify_add_watch failed")
        }
        try body()
        var seen: [(name: String, mask: UInt32)] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            while offset < count {
                let (mask, length) = buffer.withUnsafeBytes { raw in
                    (
                        raw.load(fromByteOffset: offset + 4, as: UInt32.self),
                        Int(raw.load(fromByteOffset: offset + 12, as: UInt32.self))
                    )
                }
                let nameBytes = buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
                seen.append((String(decoding: nameBytes, as: UTF8.self), mask))
                offset += 16 + length
            }
        }
        return seen
    }

    @Test("api.token is created with mode 0600 in one step: never renamed into place, never chmod-ed after")
    func tokenCreatedPrivate() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let events = try Self.events(in: directory.path) {
            _ = try APIToken.loadOrCreate(dataDirectory: directory.path)
        }
        let token = events.filter { $0.name == "api.token" }
        #expect(!token.isEmpty)
        #expect(
            !token.contains { $0.mask & UInt32(IN_ATTRIB) != 0 },
            "api.token's mode changed after it was created: \(token)"
        )
        #expect(
            !token.contains { $0.mask & UInt32(IN_MOVED_TO) != 0 },
            "api.token was renamed into place from another file"
        )
        #expect(events.allSatisfy { $0.name == "api.token" }, "other files appeared: \(events.map(\.name))")
        var info = stat()
        #expect(stat(APIToken.path(dataDirectory: directory.path), &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test("a data directory that group or others can read is set to 0700 before the node creates anything in it")
    func openDataDirectoryClosed() async throws {
        let directory = try TemporaryDirectory()
        chmod(directory.path, 0o755)
        let node = try await HTTPNode.start(network: uniqueNetwork(), directory: directory)
        defer { Task { try await node.stop() } }
        var info = stat()
        #expect(stat(directory.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700, "mode \(String(info.st_mode & 0o777, radix: 8))")
        for name in ["api.token", "identity.key", "control.sock"] {
            var file = stat()
            #expect(
                stat(directory.path + "/" + name, &file) == 0 && file.st_mode & 0o077 == 0,
                "\(name): \(String(file.st_mode & 0o777, radix: 8))"
            )
        }
    }
}
