import Foundation
import MeshCore
import Yams

extension NodeConfiguration {
    /// Environment variables that start with `SCMESH_` but are not config keys.
    public static let reservedEnvironmentVariables: Set<String> = ["SCMESH_DATA_DIR", "SCMESH_CONFIG"]

    /// Reads a configuration in layers: built-in defaults < `file` (YAML or JSON; the
    /// embedded `Config/node.yaml` when nil) < `SCMESH_…` environment variables <
    /// `overrides` (`key=value`, as given to `--set`).
    ///
    /// An environment variable names a dotted key in upper case with `.` turned into
    /// `_` (`SCMESH_TRANSPORTS_TCP_LISTEN` is `transports.tcp.listen`); list items are
    /// comma-separated. A variable under a section's prefix (`SCMESH_ESCALATION_…`)
    /// that names no key is an error; other `SCMESH_` variables are ignored. An override value starting with `[` or `{` is read as YAML.
    ///
    /// - Throws: ``MeshError`` `.invalidConfiguration` with a one-line message that
    ///   names the dotted key and what is wrong with it (unknown key or transport,
    ///   wrong type, value out of range) and where the value came from.
    public static func load(
        file: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        overrides: [String] = [],
        registry: TransportRegistry = .current
    ) throws -> NodeConfiguration {
        try checked(file: file, environment: environment, overrides: overrides, registry: registry).configuration
    }

    /// Like ``load(file:environment:overrides:registry:)``, and says what in the
    /// result leaves the node unable to do its work (``ConfigCheck/warnings``).
    public static func checked(
        file: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        overrides: [String] = [],
        registry: TransportRegistry = .current
    ) throws -> ConfigCheck {
        let text: String
        let source: String
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                let reason = FileManager.default.fileExists(atPath: file) ? "cannot read it" : "no such file"
                throw MeshError(.invalidConfiguration, "config file \(file): \(reason)")
            }
            text = String(decoding: data, as: UTF8.self)
            source = file
        } else {
            text = defaultFileContents()
            source = "built-in Config/node.yaml"
        }
        var check = try checked(
            yaml: text,
            source: source,
            environment: environment,
            overrides: overrides,
            registry: registry
        )
        if file == nil {
            check.omittedSections = []
            check.differingSections = []
        }
        return check
    }

    /// Like ``checked(file:environment:overrides:registry:)`` with the file's text given.
    public static func checked(
        yaml: String,
        source: String,
        environment: [String: String] = [:],
        overrides: [String] = [],
        registry: TransportRegistry = .current
    ) throws -> ConfigCheck {
        let (configuration, loader) = try decoded(
            yaml: yaml,
            source: source,
            environment: environment,
            overrides: overrides,
            registry: registry
        )
        let omitted = ConfigCheck.defaultSections.filter { !loader.givenSections.contains($0) }
        // Which left-out sections the built-in defaults set otherwise than Config/node.yaml.
        var differing: [String] = []
        if !omitted.isEmpty {
            // A registry without the shipped file's transports cannot read it: then no
            // left-out section is said to match it.
            let shipped = try? decoded(
                yaml: defaultFileContents(),
                source: "built-in Config/node.yaml",
                registry: registry
            )
            .configuration.tree()
            differing = omitted.filter {
                shipped == nil
                    || ConfigTree.value(at: [$0], in: loader.defaults) != ConfigTree.value(at: [$0], in: shipped!)
            }
        }
        return ConfigCheck(
            configuration: configuration,
            source: source,
            relayGiven: loader.origins["relay.enabled"] != nil,
            omittedSections: omitted,
            differingSections: differing
        )
    }

    /// The configuration from the layers, and the loader that read them.
    static func decoded(
        yaml: String,
        source: String,
        environment: [String: String] = [:],
        overrides: [String] = [],
        registry: TransportRegistry
    ) throws -> (configuration: NodeConfiguration, loader: ConfigLoader) {
        var loader = try ConfigLoader(registry: registry)
        try loader.apply(fileText: yaml, source: source)
        try loader.apply(environment: environment)
        try loader.apply(overrides: overrides)
        return (try loader.decode(), loader)
    }

    /// Like ``load(file:environment:overrides:registry:)`` with the file's text given.
    /// - Parameter source: names the text in error messages (a path, usually).
    public static func load(
        yaml: String,
        source: String,
        environment: [String: String] = [:],
        overrides: [String] = [],
        registry: TransportRegistry = .current
    ) throws -> NodeConfiguration {
        try checked(yaml: yaml, source: source, environment: environment, overrides: overrides, registry: registry)
            .configuration
    }

    /// The effective configuration as YAML, every key present (what `scmesh config check` prints).
    public func yaml() throws -> String {
        try Yams.serialize(node: tree())
    }

    /// The configuration as a YAML node tree.
    func tree() throws -> YAMLNode {
        var transportPairs: [(YAMLNode, YAMLNode)] = []
        for name in transports.keys.sorted() {
            let section = transports[name]!
            var pairs: [(YAMLNode, YAMLNode)] = [
                (YAMLNode("enabled"), YAMLNode(section.enabled ? "true" : "false")),
                (YAMLNode("priority"), YAMLNode(String(section.priority))),
            ]
            let encoded = try section.configuration.yamlNode()
            if case .mapping(let own) = encoded {
                pairs += own.map { ($0.key, $0.value) }
            }
            transportPairs.append((YAMLNode(name), YAMLNode(pairs)))
        }
        // The router's keys are its configuration type's own; `transports` goes after
        // `relay`, as in Config/node.yaml.
        guard case .mapping(let router) = try ConfigTree.encode(routerConfiguration) else {
            throw MeshError(.invalidConfiguration, "the router configuration did not encode as a mapping")
        }
        var pairs: [(YAMLNode, YAMLNode)] = [
            (YAMLNode("node"), try ConfigTree.encode(node)), (YAMLNode("store"), try ConfigTree.encode(store)),
            (YAMLNode("topics"), try ConfigTree.encode(topics)),
            (YAMLNode("http"), try ConfigTree.encode(http)),
            (YAMLNode("power"), try ConfigTree.encode(power)),
            (YAMLNode("notify"), try ConfigTree.encode(notify)),
            (YAMLNode("messages"), try ConfigTree.encode(messages)),
        ]
        for (key, value) in router {
            pairs.append((key, value))
            if ConfigTree.keyName(key) == "relay" { pairs.append((YAMLNode("transports"), YAMLNode(transportPairs))) }
        }
        return YAMLNode(pairs)
    }

    /// The text of the default config embedded in the MeshNode module (the same file
    /// as `Config/node.yaml`, compiled into the code: a binary copied anywhere has it).
    public static func defaultFileContents() -> String {
        String(decoding: PackageResources.node_yaml, as: UTF8.self)
    }
}
