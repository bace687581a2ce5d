import ArgumentParser
import Foundation
import MeshCore
import MeshNode
import MeshNodeHTTP
import NIOCore
import NIOHTTP1
import Synchronization

/// Sends a raw payload through the node's HTTP API (`POST /api/v1/messages`) and
/// prints the reply as ``callNode(_:dataDirectory:json:as:tooLarge:render:)`` would. Returns
/// false, having sent nothing, when the node serves no HTTP API.
func sendRaw(_ request: SendRequest, payload: ByteBuffer, dataDirectory: String, json: Bool) async throws -> Bool {
    try await sendRaw(bytes: payload.readableBytes, dataDirectory: dataDirectory, json: json) { client in
        try await client.send(request, payload: payload)
    }
}

/// Sends the rest of standard input, a regular file of `length` more bytes, through
/// the node's HTTP API while reading it (each chunk goes out as soon as it is read;
/// the node writes it to the outbox as it arrives). On a terminal it shows bytes and
/// rate. Returns false, having read and sent nothing, when the node serves no HTTP API.
func sendStandardInput(_ request: SendRequest, length: Int, dataDirectory: String, json: Bool) async throws -> Bool {
    let progress = SharedProgress()
    return try await sendRaw(bytes: length, dataDirectory: dataDirectory, json: json) { client in
        defer { progress.finish(length, "sent", suffix: "; the node is storing it") }
        return try await client.send(request, streaming: STDIN_FILENO, length: length) { sent in
            progress.update(sent, "sent")
        }
    }
}

/// A ``TransferProgress`` that the upload task updates.
final class SharedProgress: Sendable {
    private let state = Mutex(TransferProgress())

    func update(_ bytes: Int, _ verb: String) { state.withLock { $0.update(bytes, verb) } }
    func finish(_ bytes: Int, _ verb: String, suffix: String = "") {
        state.withLock { $0.finish(bytes, verb, suffix: suffix) }
    }
}

/// The length of the rest of standard input when it is a regular file (what
/// `scmesh send - < FILE` reads), else nil (a pipe, a terminal).
func standardInputFileLength() -> Int? {
    var info = stat()
    guard fstat(STDIN_FILENO, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
    let offset = lseek(STDIN_FILENO, 0, SEEK_CUR)
    guard offset >= 0, Int(info.st_size) >= Int(offset) else { return nil }
    return Int(info.st_size) - Int(offset)
}

private func sendRaw(
    bytes: Int,
    dataDirectory: String,
    json: Bool,
    _ send: @escaping (NodeHTTPClient) async throws -> ControlReply
) async throws -> Bool {
    var sent = false
    try await reportingErrors {
        guard let client = try await NodeHTTPClient.forNode(dataDirectory: dataDirectory) else { return }
        let reply: ControlReply
        // On a terminal, how long the node took to store it, as over the socket.
        var handover = TransferProgress()
        do {
            reply = try await send(client)
        } catch let error as MeshError where error.code == .nodeNotRunning {
            // The HTTP API did not answer (no loopback interface, a firewall): nothing
            // was sent, so the control socket carries the payload instead.
            return
        }
        sent = true
        if json {
            print(reply.line)
            if !reply.ok { throw ExitCode.failure }
        } else {
            let reply = try reply.decode(SendReply.self)
            handover.finish(bytes, "the node stored")
            print(TextReport.sent(reply))
            if let warning = reply.warning { printError("warning: \(warning)") }
        }
    }
    return sent
}

/// `scmesh dashboard`.
struct DashboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Open the running node's dashboard in a browser (or print its login URL).",
        discussion: """
            The URL carries a one-time login token (valid 5 minutes, for one use) after '#', \
            which browsers never send to the server; the page exchanges it for a session cookie.
            """
    )

    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var nodeWait: NodeWaitOption

    @Flag(name: .customLong("print-url"), help: "Print the URL instead of opening a browser.")
    var printURL = false

    func run() async throws {
        try await reportingErrors {
            guard let client = try await NodeHTTPClient.forNode(dataDirectory: dataDirectory.path) else {
                throw MeshError(
                    .invalidConfiguration,
                    "the node at \(dataDirectory.path) serves no HTTP API (http.enabled is off, or http.listen could not be bound: see `scmesh status`)"
                )
            }
            let reply = try await client.request(.POST, "/api/v1/session/login")
            struct Login: Decodable { var token: String }
            let login = try NodeHTTPClient.controlReply(reply).decode(Login.self)
            let url = "http://\(client.address)/#login=\(login.token)"
            if !printURL, let opener = Self.opener() {
                // The URL holds the login token: it goes to the browser in a file only
                // this user can read, never in an argument (which every user sees in /proc).
                let page = try Self.writeLoginPage(url: url, dataDirectory: dataDirectory.path)
                let process = Process()
                process.executableURL = URL(fileURLWithPath: opener)
                process.arguments = [URL(fileURLWithPath: page).absoluteString]
                if (try? process.run()) != nil {
                    process.waitUntilExit()
                    if process.terminationReason == .exit, process.terminationStatus == 0 {
                        print(
                            "opened the dashboard at http://\(client.address)/ (the login link is in \(page), readable by you only)"
                        )
                        return
                    }
                    // No browser came up (no display, no handler): the link itself is the answer.
                    unlink(page)
                    printError(
                        "\(opener) could not open the dashboard (exit \(process.terminationStatus)); open this link in a browser on this machine instead:"
                    )
                } else {
                    unlink(page)
                    printError("cannot run \(opener); open this link in a browser on this machine instead:")
                }
            }
            print(url)
        }
    }

    /// The browser opener: `$BROWSER` when it names an executable, else `xdg-open`.
    static func opener() -> String? {
        var candidates = ["/usr/bin/xdg-open", "/usr/local/bin/xdg-open"]
        if let browser = ProcessInfo.processInfo.environment["BROWSER"], browser.hasPrefix("/") {
            candidates.insert(browser, at: 0)
        }
        return candidates.first(where: FileManager.default.isExecutableFile(atPath:))
    }

    /// Writes `DATA-DIR/dashboard-login.html` (mode 0600 from its creation, replacing
    /// an older one), a page that sends the browser on to `url`; returns its path.
    static func writeLoginPage(url: String, dataDirectory: String) throws -> String {
        let path = (dataDirectory as NSString).appendingPathComponent("dashboard-login.html")
        unlink(path)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw MeshError(
                .invalidConfiguration,
                "cannot write \(path): \(String(cString: strerror(errno)).lowercased()); use `scmesh dashboard --print-url`"
            )
        }
        defer { close(descriptor) }
        let page = """
            <!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">\
            <title>SCMesh login</title><script>location.replace(\(String(decoding: try JSONEncoder().encode(url), as: UTF8.self)))</script>\
            <a href="\(url)">Open the dashboard</a>

            """
        let bytes = Array(page.utf8)
        guard bytes.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) == bytes.count else {
            throw MeshError(.invalidConfiguration, "cannot write \(path); use `scmesh dashboard --print-url`")
        }
        return path
    }
}
