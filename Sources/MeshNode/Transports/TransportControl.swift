import Logging
import MeshCore
import Synchronization

/// Makes the node's transports from its config: at start, and again when a disabled
/// transport is enabled (a transport's `listen` runs once per instance).
struct TransportMaker: Sendable {
    let configuration: NodeConfiguration
    let registry: TransportRegistry
    let identity: LocalIdentity
    let dataDirectory: String
    let logger: Logger

    /// A new instance of the transport `name` configures, with the discovery mode
    /// saved at run time applied.
    /// - Throws: ``MeshError`` `.invalidConfiguration` when the config does not enable it
    ///   or the registry lacks it; what its factory throws.
    func make(_ name: String) throws -> any Transport {
        let configuration =
            (try? SavedDiscoveryMode.applied(to: configuration, dataDirectory: dataDirectory))
            ?? configuration
        guard let settings = configuration.transports[name], settings.enabled else {
            throw MeshError(.invalidConfiguration, "transports.\(name) is not enabled in the config")
        }
        guard let factory = registry.factory(named: name) else {
            throw MeshError(
                .invalidConfiguration,
                "transports.\(name): no transport of that name is registered (registered: \(registry.names.joined(separator: ", ")))"
            )
        }
        var transportLogger = logger
        transportLogger[metadataKey: "transport"] = "\(name)"
        let context = TransportBuildContext(
            name: name,
            identity: identity,
            dataDirectory: dataDirectory,
            logger: transportLogger
        )
        do {
            return try factory.makeTransport(settings.configuration, context: context)
        } catch let error as MeshError {
            throw MeshError(error.code, "transports.\(name): \(error.message)", cause: error.cause)
        }
    }
}

/// The node's transports as they run now, switched off and on at run time (`scmesh
/// transports disable|enable NAME`), the choice kept in ``SavedSettings``.
final class TransportControl: Sendable {
    let router: Router
    let maker: TransportMaker
    let reports: AddressLedgerService.Reports
    /// The instances now in use, by name (the unwrapped transports, for their
    /// counters and the mDNS discovery mode).
    private let current: Mutex<[(name: String, transport: any Transport)]>

    init(
        router: Router,
        maker: TransportMaker,
        reports: AddressLedgerService.Reports,
        transports: [any Transport]
    ) {
        self.router = router
        self.maker = maker
        self.reports = reports
        current = Mutex(transports.map { (name: $0.name, transport: $0) })
    }

    /// The transports in use now, in the node's order.
    var all: [any Transport] { current.withLock { $0.map(\.transport) } }

    /// Switches `name` off now and saves that, so that it stays off after a restart.
    /// - Throws: `.invalidArgument` naming the transports when none has that name, or
    ///   when the choice cannot be saved (then nothing changed).
    func disable(_ name: String) async throws {
        try requireKnown(name)
        try SavedSettings.update(dataDirectory: maker.dataDirectory) { saved in
            var names = Set(saved.disabledTransports ?? [])
            names.insert(name)
            saved.disabledTransports = names.sorted()
        }
        try await router.disableTransport(named: name)
    }

    /// Switches `name` on again (a new instance of it) and saves that.
    /// - Throws: as ``disable(_:)``; what making the transport throws.
    func enable(_ name: String) async throws {
        try requireKnown(name)
        try SavedSettings.update(dataDirectory: maker.dataDirectory) { saved in
            saved.disabledTransports = saved.disabledTransports?.filter { $0 != name }
        }
        guard await router.isTransportDisabled(name) else { return }
        let transport = try maker.make(name)
        current.withLock { list in
            if let index = list.firstIndex(where: { $0.name == name }) { list[index].transport = transport }
        }
        try await router.enableTransport(LedgerTransport(inner: transport, reports: reports))
    }

    private func requireKnown(_ name: String) throws(MeshError) {
        let names = current.withLock { $0.map(\.name) }
        guard names.contains(name) else {
            throw MeshError(
                .invalidArgument,
                "no transport named \"\(name)\" (this node's transports: \(names.isEmpty ? "none" : names.joined(separator: ", ")))"
            )
        }
    }
}
