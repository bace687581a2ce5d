import ArgumentParser
import MeshCore
import MeshNode

/// The options of every subcommand that asks the running node something (`--data-dir`,
/// `--wait-for-node`, `--json`), and the call that uses them: one request over the
/// control socket, its reply printed as JSON or text.
struct NodeOptions: ParsableArguments {
    @OptionGroup var directory: DataDirectoryOption
    @OptionGroup var nodeWait: NodeWaitOption
    @OptionGroup var output: JSONOption

    /// The node's data directory: `--data-dir`, else the default.
    var dataDirectory: String { directory.path }

    /// Whether `--json` asks for the node's JSON reply instead of text.
    var json: Bool { output.json }

    /// Sends `command` to the node in ``dataDirectory`` and prints the reply, as
    /// ``callNode(_:dataDirectory:json:as:tooLarge:render:)`` does.
    func call<Reply: Decodable>(
        _ command: NodeCommand,
        as type: Reply.Type,
        tooLarge: String? = nil,
        render: (Reply) -> String
    ) async throws {
        try await callNode(
            command,
            dataDirectory: dataDirectory,
            json: json,
            as: type,
            tooLarge: tooLarge,
            render: render
        )
    }
}

/// Sends a command to the node and prints the reply: the raw JSON with `--json`,
/// else `render` of the decoded body. A refused request exits 1; `tooLarge`, when
/// given, is said before the node's words when it refused the request as too large
/// (what the client knows of the size and the node does not).
func callNode<Reply: Decodable>(
    _ command: NodeCommand,
    dataDirectory: String,
    json: Bool,
    as type: Reply.Type,
    tooLarge: String? = nil,
    render: (Reply) -> String
) async throws {
    try await reportingErrors(json: json) {
        let reply = try await ControlClient(dataDirectory: dataDirectory).call(command)
        if json {
            print(reply.line)
            if !reply.ok { throw ExitCode.failure }
        } else if let tooLarge, !reply.ok, reply.code == MeshError.Code.messageTooLarge.name {
            throw MeshError(.messageTooLarge, "\(tooLarge): \(reply.error ?? "the node refused it as too large")")
        } else {
            print(render(try reply.decode(type)))
        }
    }
}
