import Logging
import MeshCore
import Synchronization
import Yams

/// The settings type of one transport: the keys of its `transports.<name>` config
/// section other than `enabled` and `priority`.
///
/// `init()` gives the defaults. Use snake_case `CodingKeys`, and encode every key
/// (optionals as `null`, not skipped), so `scmesh config check` prints it and the
/// environment (`SCMESH_TRANSPORTS_<NAME>_<KEY>`) can find it. Validate values in
/// `init(from:)` by throwing `DecodingError.dataCorrupted` with the key in the
/// coding path: the node then reports the dotted key. Keys the type does not decode
/// are rejected by the node, so no extra work is needed for that.
///
/// ```swift
/// struct Configuration: TransportConfiguration {
///     var listen: [String] = ["127.0.0.1:7420"]
///     init() {}
/// }
/// ```
public protocol TransportConfiguration: Codable, Sendable {
    /// The defaults.
    init()
}

extension TransportConfiguration {
    /// The settings as a YAML node tree.
    func yamlNode() throws -> YAMLNode {
        try ConfigTree.encode(self)
    }
}

/// What a ``TransportFactory`` gets besides its configuration.
public struct TransportBuildContext: Sendable {
    /// The config section's name (`"tcp"`, ...), which the transport should use as its `name`.
    public var name: String
    /// The local node's identity.
    public var identity: LocalIdentity
    /// The node's data directory, for state the transport keeps between runs.
    public var dataDirectory: String
    /// A logger labelled for the transport.
    public var logger: Logger

    /// Creates a context.
    public init(name: String, identity: LocalIdentity, dataDirectory: String, logger: Logger) {
        self.name = name
        self.identity = identity
        self.dataDirectory = dataDirectory
        self.logger = logger
    }
}

/// How to make one kind of transport from its config section.
///
/// ```swift
/// TransportRegistry.register(
///     TransportFactory(name: "tcp", defaultPriority: 30, summary: "TCP over IP",
///                      configuration: TCPTransport.Configuration.self) { config, context in
///         TCPTransport(configuration: config, logger: context.logger)
///     })
/// ```
public struct TransportFactory: Sendable {
    /// The transport's name: its key under `transports:` in the config.
    public let name: String
    /// The priority used when the config does not set one (lower = preferred).
    public let defaultPriority: Int
    /// One line saying what the transport is, for `scmesh config check` and docs.
    public let summary: String
    /// The type that decodes the transport's own config keys.
    public let configurationType: any TransportConfiguration.Type
    private let make: @Sendable (any TransportConfiguration, TransportBuildContext) throws -> any Transport
    private let decode: @Sendable (YAMLNode) throws -> any TransportConfiguration
    private let check: @Sendable (any TransportConfiguration) throws -> Void

    /// Creates a factory.
    /// - Parameters:
    ///   - name: the config key and transport name.
    ///   - defaultPriority: priority when the config sets none (lower = preferred).
    ///   - summary: one line for documentation.
    ///   - configuration: the transport's settings type. It is decoded from the
    ///     section without `enabled` and `priority`.
    ///   - validate: checks decoded settings (ranges, address syntax) when the config
    ///     is loaded, so `scmesh config check` reports them; throw a `MeshError` whose
    ///     message names the key.
    ///   - make: builds the transport; throw a `MeshError` saying what is wrong.
    public init<Configuration: TransportConfiguration>(
        name: String,
        defaultPriority: Int,
        summary: String,
        configuration: Configuration.Type,
        validate: (@Sendable (Configuration) throws -> Void)? = nil,
        make: @escaping @Sendable (Configuration, TransportBuildContext) throws -> any Transport
    ) {
        self.name = name
        self.defaultPriority = defaultPriority
        self.summary = summary
        self.configurationType = configuration
        self.decode = { node in try YAMLDecoder().decode(Configuration.self, from: node) }
        self.check = { settings in
            if let validate, let typed = settings as? Configuration { try validate(typed) }
        }
        self.make = { settings, context in
            guard let typed = settings as? Configuration else {
                throw MeshError(
                    .invalidConfiguration,
                    "transport \(name) got settings of type \(type(of: settings)), expected \(Configuration.self)"
                )
            }
            return try make(typed, context)
        }
    }

    /// Builds the transport from decoded settings.
    /// - Throws: what the factory throws, or `.invalidConfiguration` when the settings
    ///   are not of ``configurationType``.
    public func makeTransport(
        _ settings: any TransportConfiguration,
        context: TransportBuildContext
    ) throws -> any Transport {
        try make(settings, context)
    }

    /// Decodes the transport's own keys (the section without `enabled` and `priority`).
    func decodeConfiguration(_ node: YAMLNode) throws -> any TransportConfiguration {
        try decode(node)
    }

    /// Runs the factory's validation on decoded settings.
    func validate(_ settings: any TransportConfiguration) throws {
        try check(settings)
    }

    /// The default settings.
    public func defaultConfiguration() -> any TransportConfiguration {
        configurationType.init()
    }
}

/// Transport names mapped to their factories. The node reads config sections and
/// builds transports through it.
///
/// The process-wide registry (``current``) starts with the built-in transports. A
/// program that links another transport calls ``register(_:)`` before it loads a
/// config or builds a node, the way swift-log's `LoggingSystem.bootstrap` is called
/// once at start-up. Tests use ``withOverride(_:operation:)``, which is task-local
/// and so does not disturb tests running in parallel.
public struct TransportRegistry: Sendable {
    private var factories: [String: TransportFactory]

    /// Creates a registry holding `factories` (a later one replaces an earlier one of the same name).
    public init(_ factories: [TransportFactory] = []) {
        self.factories = [:]
        for factory in factories { self.factories[factory.name] = factory }
    }

    /// Adds a factory, replacing any of the same name.
    public mutating func register(_ factory: TransportFactory) {
        factories[factory.name] = factory
    }

    /// The factory for a name, if registered.
    public func factory(named name: String) -> TransportFactory? {
        factories[name]
    }

    /// Registered names, sorted.
    public var names: [String] { factories.keys.sorted() }

    /// Registered factories, sorted by name.
    public var all: [TransportFactory] { names.compactMap { factories[$0] } }

    // MARK: Process-wide registry

    private static let shared = Mutex(TransportRegistry.builtIn)
    @TaskLocal private static var override: TransportRegistry?

    /// The registry in effect: the task-local override if one is set, else the
    /// process-wide one (built-ins plus whatever was registered).
    public static var current: TransportRegistry {
        if let override { return override }
        return shared.withLock { $0 }
    }

    /// Adds a factory to the process-wide registry, replacing a built-in of the same
    /// name. Call it at start-up, before loading a config or building a node.
    public static func register(_ factory: TransportFactory) {
        shared.withLock { $0.register(factory) }
    }

    /// Runs `operation` with `registry` as ``current`` for this task and its children
    /// (a test hook; the process-wide registry is untouched).
    public static func withOverride<T>(
        _ registry: TransportRegistry,
        operation: () async throws -> T
    ) async rethrows -> T {
        try await $override.withValue(registry, operation: operation)
    }

    /// Synchronous variant of ``withOverride(_:operation:)``.
    public static func withOverride<T>(_ registry: TransportRegistry, operation: () throws -> T) rethrows -> T {
        try $override.withValue(registry, operation: operation)
    }
}
