import Foundation
import MeshCore
import MeshNode
import NIOCore

/// Writes received payloads to files, as `scmesh inbox --save DIR` does: each to
/// `DIR/<message-id>`, mode 0600, byte for byte.
///
/// - **Raw, streamed.** A payload comes raw from the node's HTTP API
///   (`GET /api/v1/inbox/{seq}/payload`) and is written to disk piece by piece as it
///   arrives, never whole in memory. When the node serves no HTTP API (`http.enabled`
///   off, or nothing answers at its address), the payloads come from the control
///   socket instead, as base64 in an `inbox` reply. A message listed with its payload
///   (``InboxReply/Message/payloadBase64``) is written from that.
/// - **Never half a file.** Each payload goes to a temporary file in `DIR`
///   (`.<message-id>.<pid>-<random>.part`, the saving process's ID in it), is synced,
///   and only then takes its final name; an interrupted save (the connection broke,
///   the disk is full, Ctrl-C) never leaves part of a payload under `DIR/<message-id>`.
///   A save that failed removes its temporary file; one killed midway (`kill -9`, a
///   power cut) leaves it behind, and the next save into `DIR` removes it
///   (``removeStaleParts(in:)``: a temporary file whose process is gone).
/// - **An existing file is left alone**, checked before a download and again,
///   atomically, when the file takes its name; so saving again writes only what is
///   new.
///
/// ```swift
/// let saver = try InboxSaver(directory: "saved", dataDirectory: dataDirectory)
/// let listing = try await ControlClient(dataDirectory: dataDirectory)
///     .call(.inbox(InboxRequest(payloads: false))).decode(InboxReply.self)
/// for saved in try await saver.save(listing.messages) { print(saved.outcome) }
/// ```
public struct InboxSaver: Sendable {
    /// The directory the payloads are written to.
    public let directory: String
    /// The node's data directory (its control socket, `api.address`, `api.token`).
    public let dataDirectory: String

    /// What became of one message's payload.
    public struct Saved: Sendable, Hashable {
        /// The message's sequence number in the inbox.
        public var seq: Int
        /// The message's ID.
        public var id: MessageID
        /// `DIR/<message-id>`.
        public var path: String
        /// What happened.
        public var outcome: Outcome
    }

    /// What became of one message's payload.
    public enum Outcome: Sendable, Hashable {
        /// Written, its bytes from where ``Source`` says.
        case written(Source)
        /// A file of that name was there already; it was left alone.
        case existed
        /// The message left the inbox between the listing and the download (the inbox
        /// dropped it to stay within `store.inbox_capacity` or `store.inbox_max_bytes`);
        /// nothing was written.
        case gone
    }

    /// Where a written payload's bytes came from.
    public enum Source: Sendable, Hashable {
        /// Raw from the HTTP API.
        case http
        /// As base64 from the control socket (the node serves no HTTP API).
        case controlSocket
        /// From the listing itself, which carried the payload.
        case listing
    }

    /// A saver into `directory`, which it creates (mode 0700) when it does not exist.
    /// - Throws: `.invalidArgument` when `directory` is not a directory or cannot be
    ///   created.
    public init(directory: String, dataDirectory: String) throws {
        self.directory = directory
        self.dataDirectory = dataDirectory
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw MeshError(.invalidArgument, "--save \(directory): not a directory")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw MeshError(
                .invalidArgument,
                "--save \(directory): cannot create the directory (\(error.localizedDescription))"
            )
        }
    }

    /// The file a message's payload is saved to: `DIR/<message-id>`.
    public func path(of id: MessageID) -> String {
        (directory as NSString).appendingPathComponent(id.hex)
    }

    /// Saves the payload of each message not saved yet, in order; returns what became
    /// of each.
    /// - Throws: ``MeshError`` naming the message, what went wrong and what to do
    ///   (a download that broke off, a file that cannot be written, a node that
    ///   refused); what was saved before stays saved, and nothing is left under the
    ///   final name of the message that failed.
    public func save(_ messages: [InboxReply.Message]) async throws -> [Saved] {
        Self.removeStaleParts(in: directory)
        var results: [Int: Saved] = [:]
        var missing: [InboxReply.Message] = []
        for message in messages {
            let path = path(of: message.id)
            if FileManager.default.fileExists(atPath: path) {
                results[message.seq] = Saved(seq: message.seq, id: message.id, path: path, outcome: .existed)
            } else if let base64 = message.payloadBase64 {
                results[message.seq] = try await write(message, base64: base64, source: .listing)
            } else {
                missing.append(message)
            }
        }
        if !missing.isEmpty {
            // The address changes when the node restarts on port 0: found again for
            // each batch (a file read and a connect to the control socket).
            if let client = try await NodeHTTPClient.forNode(dataDirectory: dataDirectory) {
                while let message = missing.first {
                    do {
                        results[message.seq] = try await download(message, from: client)
                    } catch let error as MeshError where error.code == .nodeNotRunning {
                        break  // nothing answers HTTP there (a firewall, no loopback): the socket instead
                    }
                    missing.removeFirst()
                }
            }
            for saved in try await fetchOverSocket(missing) { results[saved.seq] = saved }
        }
        return messages.compactMap { results[$0.seq] }
    }

    /// Downloads one payload raw into a temporary file, then gives it its name.
    func download(_ message: InboxReply.Message, from client: NodeHTTPClient) async throws -> Saved {
        let path = path(of: message.id)
        let what = "message #\(message.seq) (\(message.id.hex))"
        return try await writeAtomically(message, source: .http) { file in
            var written = 0
            let reply: NodeHTTPClient.Reply
            do {
                reply = try await client.download("/api/v1/inbox/\(message.seq)/payload") { piece in
                    try file.write(piece.readableBytesView)
                    written += piece.readableBytes
                }
            } catch let error as MeshError where error.code == .controlRequestFailed {
                throw MeshError(
                    .controlRequestFailed,
                    "--save: the download of \(what) failed: \(error.message); nothing was saved under \(path); run the command again to retry",
                    cause: error
                )
            }
            switch reply.status {
            case 200:
                break
            case 404:
                return false
            case 401:
                throw MeshError(
                    .controlRequestFailed,
                    "--save: the node's HTTP API at \(client.address) refused the token in \(APIToken.path(dataDirectory: dataDirectory)) (401); the node reads it when it starts: restart the node if the file changed since"
                )
            default:
                throw MeshError(
                    .controlRequestFailed,
                    "--save: the node's HTTP API at \(client.address) refused the payload of \(what): \(Self.apiError(reply)); nothing was saved under \(path)"
                )
            }
            if let id = reply.header("X-Message-ID"), id != message.id.hex {
                throw MeshError(
                    .controlRequestFailed,
                    "--save: the node's HTTP API at \(client.address) sent message \(id) as #\(message.seq), which the inbox listed as \(message.id.hex); nothing was saved under \(path)"
                )
            }
            guard written == message.bytes else {
                throw MeshError(
                    .controlRequestFailed,
                    "--save: the download of \(what) from \(client.address) ended after \(written) of its \(message.bytes) bytes; nothing was saved under \(path); run the command again to retry"
                )
            }
            return true
        }
    }

    /// The payloads of `messages` from the control socket, as base64 in one `inbox`
    /// reply (for a node that serves no HTTP API), written as they are.
    func fetchOverSocket(_ messages: [InboxReply.Message]) async throws -> [Saved] {
        guard let first = messages.map(\.seq).min() else { return [] }
        // No "payloads" field: its default, true, is what a node of any version answers.
        let reply = try await ControlClient(dataDirectory: dataDirectory).call(.inbox(InboxRequest(after: first - 1)))
        let held = Dictionary(
            try reply.decode(InboxReply.self).messages.map { ($0.seq, $0) },
            uniquingKeysWith: { a, _ in a }
        )
        var saved: [Saved] = []
        for message in messages {
            guard let current = held[message.seq], current.id == message.id, let base64 = current.payloadBase64 else {
                saved.append(Saved(seq: message.seq, id: message.id, path: path(of: message.id), outcome: .gone))
                continue
            }
            saved.append(try await write(message, base64: base64, source: .controlSocket))
        }
        return saved
    }

    /// Writes a payload given as base64.
    func write(_ message: InboxReply.Message, base64: String, source: Source) async throws -> Saved {
        guard let payload = Data(base64Encoded: base64) else {
            throw MeshError(
                .controlRequestFailed,
                "--save: the node sent message #\(message.seq) (\(message.id.hex)) with a payload that is not base64; nothing was saved under \(path(of: message.id))"
            )
        }
        return try await writeAtomically(message, source: source) { file in
            try payload.withUnsafeBytes { try file.write($0) }
            return true
        }
    }

    // MARK: - Files

    /// A temporary file being written, owned by one save.
    struct PartFile {
        let descriptor: Int32
        let path: String
        /// The name it gets once complete.
        let finalPath: String

        /// Writes all of `bytes`.
        func write(_ bytes: some Collection<UInt8>) throws {
            try bytes.withContiguousStorageIfAvailable { try write(UnsafeRawBufferPointer($0)) }
                ?? Array(bytes).withUnsafeBytes { try write($0) }
        }

        /// Writes all of `bytes` (a short write continues; EINTR is retried).
        func write(_ bytes: UnsafeRawBufferPointer) throws {
            var offset = 0
            while offset < bytes.count {
                let count = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw InboxSaver.fileError("cannot write \(path)", errno, saving: finalPath)
                }
                offset += count
            }
        }
    }

    /// Runs `fill` on a new temporary file in the directory; when it returns true,
    /// syncs the file and gives it the message's name unless a file has that name
    /// already. The temporary file is removed whatever happens. `fill` returning false
    /// means the message is gone.
    private func writeAtomically(
        _ message: InboxReply.Message,
        source: Source,
        fill: (PartFile) async throws -> Bool
    ) async throws -> Saved {
        let (file, path) = try startPart(message)
        defer { unlink(file.path) }
        var closed = false
        defer { if !closed { close(file.descriptor) } }
        guard try await fill(file) else { return Saved(seq: message.seq, id: message.id, path: path, outcome: .gone) }
        return try finish(file, message, path: path, closed: &closed, source: source)
    }

    /// Creates `.<message-id>.<pid>-<random>.part` in the directory (mode 0600).
    private func startPart(_ message: InboxReply.Message) throws -> (PartFile, String) {
        let path = path(of: message.id)
        let random = (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let partPath = (directory as NSString).appendingPathComponent(".\(message.id.hex).\(getpid())-\(random).part")
        let descriptor = open(partPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.fileError("cannot create \(partPath)", errno, saving: path) }
        return (PartFile(descriptor: descriptor, path: partPath, finalPath: path), path)
    }

    /// Syncs and closes the temporary file, then links it to its final name, which
    /// fails rather than replace a file that appeared meanwhile.
    private func finish(
        _ file: PartFile,
        _ message: InboxReply.Message,
        path: String,
        closed: inout Bool,
        source: Source
    ) throws -> Saved {
        guard fsync(file.descriptor) == 0 else {
            throw Self.fileError("cannot write \(file.path)", errno, saving: path)
        }
        closed = true
        guard close(file.descriptor) == 0 else {
            throw Self.fileError("cannot write \(file.path)", errno, saving: path)
        }
        if link(file.path, path) == 0 {
            return Saved(seq: message.seq, id: message.id, path: path, outcome: .written(source))
        }
        switch errno {
        case EEXIST:
            return Saved(seq: message.seq, id: message.id, path: path, outcome: .existed)
        case EPERM, EOPNOTSUPP, EMLINK:
            // A file system without hard links (FAT): a plain rename, after one more look.
            if FileManager.default.fileExists(atPath: path) {
                return Saved(seq: message.seq, id: message.id, path: path, outcome: .existed)
            }
            guard rename(file.path, path) == 0 else {
                throw Self.fileError("cannot rename \(file.path) to \(path)", errno, saving: path)
            }
            return Saved(seq: message.seq, id: message.id, path: path, outcome: .written(source))
        default:
            throw Self.fileError("cannot link \(file.path) to \(path)", errno, saving: path)
        }
    }

    /// Removes the temporary files in `directory` that a save killed midway left behind:
    /// names of the form `.<message-id>.<pid>-<random>.part` (32 and 16 hex digits)
    /// whose process no longer exists. A file of a save still running (its process is
    /// alive, or the ID now names another process) and every other file are left alone.
    /// Errors are ignored: a leftover costs space, never a wrong file.
    /// - Returns: the names removed.
    @discardableResult
    package static func removeStaleParts(in directory: String) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var removed: [String] = []
        for name in names {
            guard let pid = stalePartProcess(name), kill(pid, 0) != 0, errno == ESRCH else { continue }
            if unlink((directory as NSString).appendingPathComponent(name)) == 0 { removed.append(name) }
        }
        return removed.sorted()
    }

    /// The process ID in a temporary file's name, or nil when `name` is not one.
    static func stalePartProcess(_ name: String) -> pid_t? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        // "", message ID, "<pid>-<random>", "part"
        guard parts.count == 4, parts[0].isEmpty, parts[3] == "part", parts[1].count == 32,
            parts[1].allSatisfy(\.isHexDigit)
        else { return nil }
        let owner = parts[2].split(separator: "-", omittingEmptySubsequences: false)
        guard owner.count == 2, owner[1].count == 16, owner[1].allSatisfy(\.isHexDigit), let pid = pid_t(owner[0]),
            pid > 0
        else {
            return nil
        }
        return pid
    }

    static func fileError(_ what: String, _ code: Int32, saving path: String? = nil) -> MeshError {
        let reason = String(cString: strerror(code))
        let advice =
            switch code {
            case ENOSPC, EDQUOT: "free some space there and run the command again"
            case EACCES, EPERM, EROFS: "save into a directory you can write to"
            default: "run the command again"
            }
        let nothing = path.map { "; nothing was saved under \($0)" } ?? ""
        return MeshError(.invalidArgument, "--save: \(what): \(reason)\(nothing); \(advice)")
    }

    /// The message of an API error reply, or its status.
    static func apiError(_ reply: NodeHTTPClient.Reply) -> String {
        guard let failure = try? NodeHTTPClient.controlReply(reply), !failure.ok, let error = failure.error else {
            return "status \(reply.status)"
        }
        return "\(error) (status \(reply.status))"
    }
}
