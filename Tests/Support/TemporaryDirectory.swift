import Foundation

/// A fresh directory under /tmp, removed by ``cleanUp()``. Its path is short, so a
/// control socket inside it fits `sun_path`.
public struct TemporaryDirectory: Sendable {
    /// The directory's absolute path.
    public let path: String

    /// Makes the directory (`mkdtemp`, mode 0700) named `/tmp/<prefix>-XXXXXX`.
    /// - Throws: ``SystemCallFailed`` when `mkdtemp` fails.
    public init(prefix: String = "scmesh-test") throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw SystemCallFailed("mkdtemp /tmp/\(prefix)-XXXXXX")
        }
        path = String(cString: made)
    }

    /// Removes the directory and everything in it.
    public func cleanUp() {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }
}
