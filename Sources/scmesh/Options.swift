import ArgumentParser
import Foundation
import MeshCore
import MeshNode

/// `--data-dir`, shared by every subcommand that touches a node.
struct DataDirectoryOption: ParsableArguments {
    @Option(
        name: .customLong("data-dir"),
        help:
            "The node's data directory (default: $SCMESH_DATA_DIR, else $XDG_DATA_HOME/scmesh, else ~/.local/share/scmesh)."
    )
    var dataDirectory: String?

    var path: String { dataDirectory ?? DataDirectory.defaultPath() }
}

/// `--wait-for-node`, shared by every subcommand that talks to a running node.
struct NodeWaitOption: ParsableArguments {
    @Option(
        name: .customLong("wait-for-node"),
        help: ArgumentHelp(
            "Wait up to this many seconds for the node to answer (default: 10 while a node is starting in the data dir, else none).",
            valueName: "seconds"
        )
    )
    var seconds: Double?

    /// Sets the wait for every control-socket call of this process.
    func validate() throws {
        guard let seconds else { return }
        guard seconds.isFinite, seconds >= 0, seconds <= 3600 else {
            throw ValidationError("--wait-for-node takes a number of seconds from 0 to 3600, got \(seconds)")
        }
        ControlClient.nodeWait = .milliseconds(Int64(seconds * 1000))
    }
}

/// `--json`.
struct JSONOption: ParsableArguments {
    @Flag(name: .customLong("json"), help: "Print the node's JSON reply instead of text.")
    var json = false
}

/// `--full`: whole IDs in a listing.
struct FullIDsOption: ParsableArguments {
    @Flag(
        help:
            "Print whole peer and message IDs (by default a peer is a contact's alias, or a node's ID, with the first 8 hex characters of its ID, and a message ID its first 8; every command takes such a start)."
    )
    var full = false
}

/// Prints one `scmesh: ` line to standard error (control characters escaped: a
/// message may quote remote data).
func printError(_ message: String) {
    FileHandle.standardError.write(Data(("scmesh: " + TextReport.escaped(message) + "\n").utf8))
}

/// Runs `body`, turning any error into one line on stderr and exit code 1: a
/// `MeshError` prints its message; anything else (a library's error that escaped)
/// is described without the library's call syntax. With `json`, the line is instead
/// a failure object on stdout, shaped like the node's (`{"ok":false,"error":…,"code":…}`),
/// so a script reading `--json` output gets JSON whether the node or the CLI refused.
func reportingErrors(json: Bool = false, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as MeshError {
        if json {
            print(String(decoding: ControlJSON.failure(error.message, code: error.code.name), as: UTF8.self))
        } else {
            printError(error.message)
        }
        throw ExitCode.failure
    } catch let error as ExitCode {
        throw error
    } catch let error as CleanExit {
        throw error
    } catch {
        let described = MeshError.describing(error)
        if json {
            print(String(decoding: ControlJSON.failure(described.message, code: described.code.name), as: UTF8.self))
        } else {
            printError(described.message)
        }
        throw ExitCode.failure
    }
}
