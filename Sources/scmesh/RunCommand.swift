import ArgumentParser
import Foundation
import Logging
import MeshCore
import MeshNode
import MeshNodeHTTP
import ServiceLifecycle

/// `scmesh run`.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a node until SIGINT or SIGTERM.",
        discussion: """
            The config is layered: built-in defaults < FILE (or the built-in Config/node.yaml) \
            < SCMESH_* environment variables < --set flags.
            """
    )

    @Option(
        name: .long,
        help: "Config file, YAML or JSON (default: $SCMESH_CONFIG, else the built-in Config/node.yaml)."
    )
    var config: String?

    @OptionGroup var dataDirectory: DataDirectoryOption

    @Option(
        name: .customLong("set"),
        help: ArgumentHelp(
            "Override one config key, e.g. --set relay.enabled=false (repeatable).",
            valueName: "key=value"
        )
    )
    var overrides: [String] = []

    func run() async throws {
        // Every file and socket the node creates is its user's alone from the start.
        umask(0o077)
        try await reportingErrors {
            let environment = ProcessInfo.processInfo.environment
            let file = config ?? environment["SCMESH_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
            let check = try NodeConfiguration.checked(file: file, environment: environment, overrides: overrides)
            // The config as the file says; buildNode applies what was saved at run time.
            let configuration = check.configuration
            // A discovery mode set at run time (scmesh settings --discovery-mode) outlives
            // restarts: the exposure notice speaks of the mode in force.
            let exposed = try SavedDiscoveryMode.applied(to: configuration, dataDirectory: dataDirectory.path)
            // Nothing is created in a data directory whose socket path cannot be bound.
            try DataDirectory.requireSocketPathFits(dataDirectory.path)
            // The log file may live in the data directory, which the first run creates.
            if configuration.node.logFile != nil { try DataDirectory.prepare(dataDirectory.path) }
            try LogOutput.choose(
                logFile: configuration.node.logFile,
                dataDirectory: dataDirectory.path,
                environment: environment
            ).bootstrap(level: configuration.node.logLevel)
            // Another node on this data directory is the one error worth saying first,
            // before any note about this one (the lock itself is taken in Node.run).
            if DataDirectoryLock.isHeld(dataDirectory: dataDirectory.path) {
                throw MeshError(
                    .nodeAlreadyRunning,
                    "another node is running with data dir \(dataDirectory.path) (it holds \(DataDirectoryLock.fileName)); stop it, or pass another --data-dir"
                )
            }
            if let notice = ExposureNotice.line(for: exposed) {
                // One line on stderr (the journal under systemd), before the node's log.
                printError("note: \(notice)")
            }
            let logger = Logger(label: "scmesh")
            // A node that can do nothing says so before anything else.
            for warning in check.warnings { logger.warning("\(warning)") }
            let node = try buildNode(config: configuration, dataDirectory: dataDirectory.path, logger: logger)
            // The HTTP API (http.enabled) runs as one more service of the node.
            let http: [any Service] =
                configuration.http.enabled ? [try await NodeHTTPServer(node: node, logger: logger)] : []
            try await node.run(extraServices: http)
        }
    }
}
