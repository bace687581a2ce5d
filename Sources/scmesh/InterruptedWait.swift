import Dispatch
import Foundation
import MeshCore
import MeshNode

/// Ctrl-C during `scmesh send --wait`: the node keeps the message, so the command
/// says so (with the message ID) instead of dying with a bare `^C`.
enum InterruptedWait {
    /// The SIGINT source; kept for the life of the process.
    nonisolated(unsafe) private static var source: (any DispatchSourceSignal)?

    /// From now on SIGINT prints that the message stays queued and exits 130 (the
    /// shell's code for a command ended by SIGINT). With `json`, the line is a failure
    /// object on stdout (`code` `interrupted`, with the `message_id`).
    static func install(messageID: String, peer: String, json: Bool) {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler {
            let message =
                "stopped waiting: message \(messageID) stays queued for \(peer) and goes out when a route appears; `scmesh history --trace \(messageID)` follows it, and sending again with --id \(messageID) makes no duplicate"
            if json {
                let object = ControlJSON.failure(message, code: "interrupted", messageID: MessageID(hex: messageID))
                FileHandle.standardOutput.write(Data(object + [UInt8(ascii: "\n")]))
            } else {
                printError(message)
            }
            exit(130)
        }
        source.resume()
        Self.source = source
    }
}
