import Foundation
import MeshCore

/// Runs a program to completion with `posix_spawn` and `waitpid`, timed from the spawn
/// to the exit.
///
/// The CLI benchmarks time whole `scmesh` processes. Foundation's `Process` adds its own
/// cost on Linux around that: measured on this machine, `scmesh --version` timed through
/// `Process.run` + `waitUntilExit` read about 51 ms for a build that the shell times at
/// 16–30 ms. So what is timed goes through the C calls a shell uses.
enum TimedRun {
    /// Runs `path` with `arguments`, standard input from the file `input` (or
    /// `/dev/null`), output and errors to `/dev/null`.
    /// - Returns: the seconds from the spawn to the exit.
    /// - Throws: when the spawn fails or the program exits non-zero.
    @discardableResult
    static func run(_ path: String, _ arguments: [String], input: String? = nil) throws -> Double {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let start = ContinuousClock.now
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw MeshError(.invalidArgument, "cannot start \(path): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let seconds = TCPBench.seconds(ContinuousClock.now - start)
        // Exited normally with status 0: the low 7 bits (the signal) and the exit code are 0.
        guard status == 0 else {
            throw MeshError(
                .invalidArgument,
                "\(path) \(arguments.joined(separator: " ")) ended with wait status \(status)"
            )
        }
        return seconds
    }
}
