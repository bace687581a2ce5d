import Foundation
import MeshCore
import Yams

/// Builds the layered config tree and decodes it. Internal: see `NodeConfiguration.load`.
struct ConfigLoader {
    let registry: TransportRegistry
    /// The defaults, for key lookups.
    let defaults: YAMLNode
    /// The merged tree so far.
    var tree: YAMLNode
    /// Dotted key → where its value came from, for error messages.
    var origins: [String: String] = [:]
    /// The top-level sections some layer (file, environment, `--set`) gave.
    var givenSections: Set<String> = []

    init(registry: TransportRegistry) throws {
        self.registry = registry
        defaults = try NodeConfiguration(defaultsFor: registry).tree()
        tree = defaults
    }

    /// Merges a YAML or JSON document over the tree.
    mutating func apply(fileText: String, source: String) throws {
        let document: YAMLNode?
        do {
            document = try Yams.compose(yaml: fileText)
        } catch {
            throw MeshError(
                .invalidConfiguration,
                "\(source): not valid YAML or JSON: \(ConfigTree.oneLine(error))",
                cause: error
            )
        }
        guard let document else { return }  // an empty file changes nothing
        if case .scalar(let scalar) = document, document.null != nil || scalar.string.isEmpty { return }
        guard case .mapping = document else {
            throw MeshError(
                .invalidConfiguration,
                "\(source): the top level must be a mapping of sections (node, relay, transports, ...)"
            )
        }
        if case .mapping(let sections) = document {
            givenSections.formUnion(sections.keys.map(ConfigTree.keyName))
        }
        for (path, mark) in ConfigTree.keyMarks(document) {
            origins[ConfigTree.dotted(path)] = mark.map { "\(source) line \($0.line)" } ?? source
        }
        tree = ConfigTree.merge(tree, document)
    }

    /// Applies `SCMESH_…` variables.
    mutating func apply(environment: [String: String]) throws {
        var index: [String: [String]] = [:]
        for path in ConfigTree.leafPaths(defaults) {
            index[ConfigTree.environmentName(path)] = path
        }
        // Variables under a section's prefix must name a key (a typo is an error);
        // other SCMESH_ variables (tooling's, like SCMESH_AVAHI_DIR) are not config.
        var sectionPrefixes: [String] = []
        if case .mapping(let sections) = defaults {
            sectionPrefixes = sections.map { ConfigTree.environmentName([ConfigTree.keyName($0.key)]) }
        }
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) {
            guard name.hasPrefix("SCMESH_"), !NodeConfiguration.reservedEnvironmentVariables.contains(name) else {
                continue
            }
            guard let path = index[name] else {
                guard sectionPrefixes.contains(where: { name == $0 || name.hasPrefix($0 + "_") }) else { continue }
                throw MeshError(
                    .invalidConfiguration,
                    "environment variable \(name) names no config key (write SCMESH_ and the dotted key in upper case with _ for ., e.g. SCMESH_RELAY_ENABLED; unset it otherwise)"
                )
            }
            try set(path, text: value, flowAllowed: false, origin: "environment \(name)")
        }
    }

    /// Applies `key=value` overrides.
    mutating func apply(overrides: [String]) throws {
        for override in overrides {
            guard let equals = override.firstIndex(of: "=") else {
                throw MeshError(
                    .invalidConfiguration,
                    "--set \(override): expected KEY=VALUE, e.g. --set relay.enabled=false"
                )
            }
            let key = String(override[..<equals]).trimmingCharacters(in: .whitespaces)
            let value = String(override[override.index(after: equals)...])
            let path = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !key.isEmpty, !path.contains(where: \.isEmpty) else {
                throw MeshError(
                    .invalidConfiguration,
                    "--set \(override): \"\(key)\" is not a dotted key like escalation.max_attempts"
                )
            }
            try set(path, text: value, flowAllowed: true, origin: "--set \(key)")
        }
    }

    /// Sets one key from text, splitting on commas when the default is a list.
    private mutating func set(_ path: [String], text: String, flowAllowed: Bool, origin: String) throws {
        let value: YAMLNode
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if flowAllowed, trimmed.hasPrefix("[") || trimmed.hasPrefix("{") {
            do {
                value = try Yams.compose(yaml: trimmed) ?? YAMLNode("null")
            } catch {
                throw MeshError(
                    .invalidConfiguration,
                    "\(origin): \(trimmed) is not valid YAML: \(ConfigTree.oneLine(error))"
                )
            }
        } else if case .sequence = ConfigTree.value(at: path, in: defaults) {
            let items = trimmed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
            value = YAMLNode(items.map { YAMLNode($0) })
        } else {
            value = YAMLNode(text)
        }
        do {
            tree = try ConfigTree.setting(value, at: path, in: tree)
        } catch let error as ConfigTree.PathError {
            throw MeshError(
                .invalidConfiguration,
                "\(origin): \(ConfigTree.dotted(error.prefix)) is a single value, so \(ConfigTree.dotted(path)) cannot be set"
            )
        }
        origins[ConfigTree.dotted(path)] = origin
        givenSections.insert(path[0])
        for leaf in ConfigTree.leafPaths(value, prefix: path) { origins[ConfigTree.dotted(leaf)] = origin }
    }

    /// Decodes the merged tree and rejects unknown keys.
    ///
    /// `node:` decodes into ``NodeConfiguration/NodeSettings``, `transports:` through
    /// the registry, and every other top-level key straight into MeshCore's
    /// `RouterConfiguration`, whose `Codable` keys are the config keys.
    func decode() throws -> NodeConfiguration {
        // Unknown keys outside `transports:` are known before decoding (the defaults
        // hold every key); report them here, in this loader's words, rather than as the
        // core types' strict decoders would. Transport sections are checked afterwards,
        // against their decoded settings.
        if let unknown = ConfigTree.firstUnknownKey(in: Self.without(["transports"], in: tree), known: defaults) {
            throw unknownKeyError(unknown, known: defaults)
        }
        var configuration = NodeConfiguration(defaultsFor: TransportRegistry())
        do {
            let document = try YAMLDecoder().decode(ConfigDocument.self, from: tree)
            configuration.node = document.node
            configuration.store = document.store
            configuration.topics = document.topics
            configuration.http = document.http
            configuration.power = document.power
            configuration.notify = document.notify
            configuration.messages = document.messages
            configuration.routerConfiguration = try YAMLDecoder().decode(
                RouterConfiguration.self,
                from: Self.without(ConfigDocument.nodeKeys, in: tree)
            )
            configuration.transports = try decodeTransports()
        } catch let error as DecodingError {
            throw describe(error)
        }
        let known = ConfigTree.merge(defaults, try configuration.tree())
        if let unknown = ConfigTree.firstUnknownKey(in: tree, known: known) {
            throw unknownKeyError(unknown, known: known)
        }
        return configuration
    }

    /// "unknown key a.b (known keys of a: ...)" and where it was set.
    func unknownKeyError(_ unknown: [String], known: YAMLNode) -> MeshError {
        let parent = Array(unknown.dropLast())
        if let moved = ConfigDocument.movedKeys[ConfigTree.dotted(unknown)] {
            return MeshError(
                .invalidConfiguration,
                "\(ConfigTree.dotted(unknown)) is now \(moved); rename the key\(originSuffix(unknown))"
            )
        }
        var message = "unknown key \(ConfigTree.dotted(unknown))"
        if case .mapping(let siblings) = ConfigTree.value(at: parent, in: known) {
            let names = siblings.keys.compactMap(\.string)
            if !names.isEmpty {
                message +=
                    " (known keys\(parent.isEmpty ? "" : " of \(ConfigTree.dotted(parent))"): \(names.joined(separator: ", ")))"
            }
        }
        return MeshError(.invalidConfiguration, message + originSuffix(unknown))
    }

    /// A top-level mapping without some of its keys (anything else unchanged).
    static func without(_ keys: Set<String>, in node: YAMLNode) -> YAMLNode {
        guard case .mapping(let mapping) = node else { return node }
        return YAMLNode(mapping.filter { !keys.contains(ConfigTree.keyName($0.key)) }.map { ($0.key, $0.value) })
    }

    /// Decodes `transports:`: each section's `enabled` and `priority`, and the rest
    /// through its factory (which sees only its own keys).
    func decodeTransports() throws -> [String: NodeConfiguration.TransportSettings] {
        let prefix = [AnyCodingKey("transports")]
        guard case .mapping(let sections) = ConfigTree.value(at: ["transports"], in: tree) else {
            throw DecodingError.typeMismatch(
                YAMLNode.Mapping.self,
                .init(codingPath: prefix, debugDescription: "transports must be a mapping")
            )
        }
        var result: [String: NodeConfiguration.TransportSettings] = [:]
        for (key, value) in sections {
            let name = ConfigTree.keyName(key)
            let path = prefix + [AnyCodingKey(name)]
            guard let factory = registry.factory(named: name) else {
                let known = registry.names.joined(separator: ", ")
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: path,
                        debugDescription:
                            "unknown transport \"\(name)\" (registered: \(known.isEmpty ? "none" : known))"
                    )
                )
            }
            guard case .mapping(let section) = value else {
                throw DecodingError.typeMismatch(YAMLNode.Mapping.self, .init(codingPath: path, debugDescription: ""))
            }
            var common: [(YAMLNode, YAMLNode)] = []
            var own: [(YAMLNode, YAMLNode)] = []
            for pair in section {
                if ["enabled", "priority"].contains(ConfigTree.keyName(pair.key)) {
                    common.append((pair.key, pair.value))
                } else {
                    own.append((pair.key, pair.value))
                }
            }
            let header: TransportHeader
            let settings: any TransportConfiguration
            do {
                header = try YAMLDecoder().decode(TransportHeader.self, from: YAMLNode(common))
                settings = try factory.decodeConfiguration(YAMLNode(own))
            } catch let error as DecodingError {
                throw error.prefixed(with: path)
            }
            do {
                try factory.validate(settings)
            } catch let error as MeshError {
                // A transport may name its key as "tcp.listen ..."; make that dotted from the top.
                let message =
                    error.message.hasPrefix("\(name).")
                    ? "transports.\(error.message)" : "transports.\(name): \(error.message)"
                // Where the named key was set ("tcp.listen entry ..."), else the section.
                var keyPath = ["transports", name]
                if error.message.hasPrefix("\(name).") {
                    let key = error.message.dropFirst(name.count + 1).prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                    if !key.isEmpty { keyPath.append(String(key)) }
                }
                throw MeshError(.invalidConfiguration, message + originSuffix(keyPath), cause: error)
            }
            result[name] = .init(enabled: header.enabled, priority: header.priority, configuration: settings)
        }
        return result
    }

    /// Turns a decoding error into a one-line message naming the dotted key.
    func describe(_ error: DecodingError) -> MeshError {
        let path: [String]
        let problem: String
        switch error {
        case .typeMismatch(let type, let context):
            path = ConfigTree.pathComponents(context.codingPath)
            problem =
                "expected \(ConfigTree.expectation(type)), got \(ConfigTree.describe(ConfigTree.value(at: path, in: tree)))"
        case .valueNotFound(let type, let context):
            path = ConfigTree.pathComponents(context.codingPath)
            problem = "expected \(ConfigTree.expectation(type)), got null"
        case .keyNotFound(let key, let context):
            path = ConfigTree.pathComponents(context.codingPath + [key])
            problem = "is required but missing"
        case .dataCorrupted(let context):
            path = ConfigTree.pathComponents(context.codingPath)
            problem = context.debugDescription
        @unknown default:
            return MeshError(.invalidConfiguration, "invalid config: \(error)", cause: error)
        }
        let key = path.isEmpty ? "config" : ConfigTree.dotted(path)
        return MeshError(.invalidConfiguration, "\(key): \(problem)\(originSuffix(path))", cause: error)
    }

    /// " (from SOURCE)" for the layer that set `path` (or the nearest key around it).
    func originSuffix(_ path: [String]) -> String {
        var prefix = path
        while !prefix.isEmpty {
            if let origin = origins[ConfigTree.dotted(prefix)] { return " (from \(origin))" }
            prefix.removeLast()
        }
        let dotted = ConfigTree.dotted(path)
        if let origin = origins.first(where: { $0.key.hasPrefix(dotted + ".") })?.value { return " (from \(origin))" }
        return ""
    }
}
