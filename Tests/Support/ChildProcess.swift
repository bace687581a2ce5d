import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, for tests that run `scmesh` and other
/// programs: the subset of Foundation's `Process` those tests use.
///
/// Foundation's `Process.run()` on Linux lists `/proc/self/fd` to close the parent's
/// descriptors in the child, and copies each `dirent`'s whole 256-byte name field while
/// doing so: when a short record ends the directory buffer just below an unmapped page,
/// that copy reads past it and the whole test process dies of SIGSEGV
/// (swiftlang/swift-corelibs-foundation#5472). This spawns with
/// `posix_spawn_file_actions_addclosefrom_np` instead, and retries the calls a signal
/// interrupted (EINTR) instead of trapping.
///
/// ```swift
/// let node = try ChildProcess(executable: path, arguments: ["run"], environment: env)
/// defer { node.kill() }
/// ```
public final class ChildProcess: Sendable {
    /// Where a standard stream of the child goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// This process's own stream of the same number.
        case inherit
        /// A descriptor of this process (duplicated into the child; still open here).
        case descriptor(Int32)
        /// A file handle of this process (duplicated into the child; still open here).
        case handle(FileHandle)
        /// The child's end of a pipe (its read end for standard input, its write end
        /// otherwise), closed here once the child has it.
        case pipe(Pipe)
    }

    /// The child's process ID.
    public let processIdentifier: pid_t
    /// The child's raw wait status, once it was reaped.
    private let waitStatus = Mutex<Int32?>(nil)

    /// Starts `executable` with `arguments` and `environment`; every descriptor of this
    /// process other than the three streams is closed in the child.
    /// - Throws: ``ChildProcessError`` naming the call that failed and its errno.
    public init(
        executable: String,
        arguments: [String],
        environment: [String: String],
        standardInput: Stream = .null,
        standardOutput: Stream = .null,
        standardError: Stream = .null
    ) throws {
        var childEnds: [FileHandle] = []
        var actions = posix_spawn_file_actions_t()
        try Self.check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init")
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, stream) in [
            (STDIN_FILENO, standardInput), (STDOUT_FILENO, standardOutput), (STDERR_FILENO, standardError),
        ] {
            switch stream {
            case .null:
                let flags = target == STDIN_FILENO ? O_RDONLY : O_WRONLY
                try Self.check(
                    posix_spawn_file_actions_addopen(&actions, target, "/dev/null", flags, 0),
                    "posix_spawn_file_actions_addopen /dev/null"
                )
            case .inherit:
                break
            case .descriptor(let descriptor):
                try Self.check(
                    posix_spawn_file_actions_adddup2(&actions, descriptor, target),
                    "posix_spawn_file_actions_adddup2"
                )
            case .handle(let handle):
                try Self.check(
                    posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target),
                    "posix_spawn_file_actions_adddup2"
                )
            case .pipe(let pipe):
                let end = target == STDIN_FILENO ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                try Self.check(
                    posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, target),
                    "posix_spawn_file_actions_adddup2"
                )
                childEnds.append(end)
            }
        }
        try Self.check(Self.addCloseFrom(&actions, 3), "posix_spawn_file_actions_addclosefrom_np")

        var attributes = posix_spawnattr_t()
        try Self.check(posix_spawnattr_init(&attributes), "posix_spawnattr_init")
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own (as `Process` does), and no signal blocked in the
        // child whatever the spawning thread blocks.
        var none = sigset_t()
        sigemptyset(&none)
        try Self.check(posix_spawnattr_setsigmask(&attributes, &none), "posix_spawnattr_setsigmask")
        try Self.check(
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK)),
            "posix_spawnattr_setflags"
        )

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid = pid_t()
        var result = EINTR
        for _ in 0..<Self.interruptedRetries where result == EINTR {
            result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        }
        try Self.check(result, "posix_spawn \(executable)")
        processIdentifier = pid
        // The throwing `close()`: `closeFile()` traps on an interrupted close.
        for end in childEnds { try? end.close() }
    }

    /// The C type of `posix_spawn_file_actions_addclosefrom_np`.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which the
    /// Glibc module does not declare (it needs `_GNU_SOURCE`).
    private static let addCloseFrom: AddCloseFrom = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            preconditionFailure("glibc has no posix_spawn_file_actions_addclosefrom_np: glibc 2.34 or later is needed")
        }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    /// How often a call a signal interrupted is tried again before it counts as failed.
    static let interruptedRetries = 100

    private static func check(_ result: Int32, _ call: String) throws {
        guard result != 0 else { return }
        throw ChildProcessError(call: call, errno: result)
    }

    /// Whether the child still runs (it is reaped once it ended).
    public var isRunning: Bool { reap() == nil }

    /// Blocks until the child ended, and reaps it.
    public func waitUntilExit() {
        while reap() == nil {
            // Waits without reaping: the reaping happens under the lock, in `reap()`.
            var info = siginfo_t()
            let result = waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT)
            if result != 0 && errno != EINTR { return }
        }
    }

    /// The child's exit code, or the signal that ended it. The child must have ended.
    public var terminationStatus: Int32 {
        guard let status = reap() else { preconditionFailure("process \(processIdentifier) still runs") }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    /// Whether the child exited or a signal ended it. The child must have ended.
    public var terminationReason: Process.TerminationReason {
        guard let status = reap() else { preconditionFailure("process \(processIdentifier) still runs") }
        return status & 0x7f == 0 ? .exit : .uncaughtSignal
    }

    /// Sends SIGTERM.
    public func terminate() { Glibc.kill(processIdentifier, SIGTERM) }

    /// Sends SIGKILL unless the child already ended, and reaps it.
    public func kill() {
        if isRunning { Glibc.kill(processIdentifier, SIGKILL) }
        waitUntilExit()
    }

    /// The raw wait status, reaping the child if it ended; nil while it runs.
    private func reap() -> Int32? {
        waitStatus.withLock { known in
            if let known { return known }
            var status: Int32 = 0
            var result: pid_t
            repeat {
                result = waitpid(processIdentifier, &status, WNOHANG)
            } while result == -1 && errno == EINTR
            guard result == processIdentifier else { return nil }
            known = status
            return status
        }
    }

    /// Runs `executable` to its end with `input` (if any) on its standard input, and
    /// returns its exit status and both outputs. Blocking: callers run it on a thread
    /// of its own (`onOwnThread`, MeshTesting, or a `Thread`), off Swift's cooperative
    /// pool.
    public static func run(
        executable: String,
        arguments: [String],
        environment: [String: String],
        input: [UInt8]? = nil,
        standardInputFile: String? = nil
    ) throws -> (status: Int32, output: [UInt8], error: [UInt8]) {
        let output = try Pipe2()
        let errors = try Pipe2()
        var inputPipe: Pipe2?
        var inputFile: Int32 = -1
        defer {
            output.closeBoth()
            errors.closeBoth()
            inputPipe?.closeBoth()
            if inputFile >= 0 { close(inputFile) }
        }
        let stdin: Stream
        if input != nil {
            inputPipe = try Pipe2()
            stdin = .descriptor(inputPipe!.read)
        } else if let standardInputFile {
            inputFile = open(standardInputFile, O_RDONLY | O_CLOEXEC)
            guard inputFile >= 0 else { throw ChildProcessError(call: "open \(standardInputFile)", errno: errno) }
            stdin = .descriptor(inputFile)
        } else {
            stdin = .null
        }
        let child = try ChildProcess(
            executable: executable,
            arguments: arguments,
            environment: environment,
            standardInput: stdin,
            standardOutput: .descriptor(output.write),
            standardError: .descriptor(errors.write)
        )
        output.closeWrite()
        errors.closeWrite()
        if let pipe = inputPipe, let input {
            pipe.closeRead()
            // A child that stops reading early (an oversize payload refused at the limit)
            // closes the pipe: the rest of the input is not wanted, and not an error here.
            writeAll(input, to: pipe.write)
            pipe.closeWrite()
        }
        let (out, err) = readBoth(output.read, errors.read)
        child.waitUntilExit()
        return (child.terminationStatus, out, err)
    }

    /// Writes `bytes` to `descriptor` until done or the reader went away.
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }

    /// Reads two descriptors to their ends at once (a child filling one pipe while
    /// the other is read would never finish).
    private static func readBoth(_ first: Int32, _ second: Int32) -> ([UInt8], [UInt8]) {
        var results: [[UInt8]] = [[], []]
        var open = [true, true]
        let descriptors = [first, second]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while open[0] || open[1] {
            var fds = (0..<2).map { pollfd(fd: open[$0] ? descriptors[$0] : -1, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            for index in 0..<2 where open[index] && fds[index].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptors[index], $0.baseAddress, $0.count) }
                if count > 0 {
                    results[index] += buffer[0..<count]
                } else if count == 0 || errno != EINTR {
                    open[index] = false
                }
            }
        }
        return (results[0], results[1])
    }
}

/// A pipe whose ends are closed on exec (only a child's dup2 copies survive it).
private final class Pipe2 {
    private(set) var read: Int32
    private(set) var write: Int32

    init() throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw ChildProcessError(call: "pipe", errno: errno) }
        read = ends[0]
        write = ends[1]
        // Children started by others meanwhile close it anyway (every spawn closes the
        // descriptors above 2); this covers programs that exec by other means.
        _ = fcntl(read, F_SETFD, FD_CLOEXEC)
        _ = fcntl(write, F_SETFD, FD_CLOEXEC)
    }

    func closeRead() {
        if read >= 0 { close(read) }
        read = -1
    }

    func closeWrite() {
        if write >= 0 { close(write) }
        write = -1
    }

    func closeBoth() {
        closeRead()
        closeWrite()
    }
}

/// A child process could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    /// The call that failed.
    public let call: String
    /// Its error number.
    public let errno: Int32

    /// The failure of `call` with error number `errno`.
    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// What failed, and the system's reason.
    public var description: String {
        "cannot start a child process: \(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
