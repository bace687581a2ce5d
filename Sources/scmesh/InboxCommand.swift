import ArgumentParser
import Foundation
import MeshCore
import MeshNode

/// `scmesh inbox`.
struct InboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inbox",
        abstract: "Show messages received by the running node; --follow waits for new ones, --save writes payloads to files.")

    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var output: JSONOption

    @Option(help: "Only messages with a sequence number above this.")
    var after: Int?

    @Option(help: "At most this many (the newest).")
    var limit: Int?

    @Flag(name: [.customShort("f"), .long], help: "After the messages so far, keep printing new ones as they arrive (until Ctrl-C).")
    var follow = false

    @Option(
        help: ArgumentHelp(
            "Also write each message's payload, as received, to DIR/<message-id> (mode 0600; an existing file is left alone).",
            valueName: "dir"))
    var save: String?

    /// How often --follow asks the node for new messages.
    static let pollInterval: Duration = .milliseconds(250)

    func run() async throws {
        try await reportingErrors(json: output.json) {
            if let save { try InboxSaver.prepare(save) }
            let client = ControlClient(dataDirectory: dataDirectory.path)
            var cursor = after ?? 0
            var first = true
            while true {
                let request = ControlRequest(cmd: "inbox", after: cursor, limit: first ? limit : nil)
                let reply = try await client.call(request)
                let inbox = try reply.decode(InboxReply.self)
                if !follow {
                    print(output.json ? reply.line : TextReport.inbox(inbox))
                } else {
                    for message in inbox.messages {
                        print(output.json ? try InboxReply.jsonLine(message) : TextReport.inboxMessage(message))
                    }
                    if first, inbox.messages.isEmpty, !output.json { printError("waiting for messages (Ctrl-C to stop)") }
                }
                if let save {
                    for message in inbox.messages {
                        if let path = try InboxSaver.write(message, to: save), !output.json { printError("saved #\(message.seq) to \(path)") }
                    }
                }
                fflush(nil)  // every stream: print is buffered when piped, and --follow must not sit on lines
                cursor = inbox.messages.map(\.seq).max() ?? cursor
                first = false
                guard follow else { return }
                try await Task.sleep(for: Self.pollInterval)
            }
        }
    }
}

/// Writes inbox payloads to files for `scmesh inbox --save`.
enum InboxSaver {
    /// Creates the directory (mode 0700) if needed.
    static func prepare(_ directory: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw MeshError(.invalidArgument, "--save \(directory): not a directory") }
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw MeshError(.invalidArgument, "--save \(directory): cannot create the directory (\(error.localizedDescription))")
        }
    }

    /// Writes the payload to `directory/<message-id>` unless that file exists; returns
    /// its path when written.
    static func write(_ message: InboxReply.Message, to directory: String) throws -> String? {
        let path = (directory as NSString).appendingPathComponent(message.id.hex)
        guard let payload = Data(base64Encoded: message.payloadBase64) else {
            throw MeshError(.controlRequestFailed, "message #\(message.seq): the node sent a payload that is not base64")
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            if errno == EEXIST { return nil }
            throw MeshError(.invalidArgument, "--save: cannot create \(path): \(String(cString: strerror(errno)))")
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            try handle.write(contentsOf: payload)
            try handle.close()
        } catch {
            throw MeshError(.invalidArgument, "--save: cannot write \(path): \(error.localizedDescription)")
        }
        return path
    }
}

extension InboxReply {
    /// One message as a JSON line (`scmesh inbox --follow --json`).
    static func jsonLine(_ message: Message) throws -> String {
        String(decoding: try ControlJSON.encoder().encode(message), as: UTF8.self)
    }
}
