import Yams

/// A loaded configuration and what in it leaves the node unable to do its work:
/// relaying off, no transport, sections of `Config/node.yaml` that the file left out.
/// `scmesh config check` prints ``warnings`` and `scmesh run` logs them at warning level.
public struct ConfigCheck: Sendable {
    /// The effective configuration.
    public var configuration: NodeConfiguration
    /// Where the file came from (a path, or the built-in default).
    public var source: String
    /// Whether some layer set `relay.enabled` (unset counts as off).
    var relayGiven: Bool
    /// The top-level sections of `Config/node.yaml` that no layer gave, in its order.
    public var omittedSections: [String]
    /// The omitted sections whose built-in defaults differ from `Config/node.yaml`'s values.
    public var differingSections: [String]

    /// The top-level sections of the default config, in its order.
    static let defaultSections: [String] = {
        guard case .mapping(let sections)? = try? Yams.compose(yaml: NodeConfiguration.defaultFileContents())
        else { return [] }
        return sections.keys.map(ConfigTree.keyName)
    }()

    /// One line for each thing that keeps the node from working as a newcomer expects.
    public var warnings: [String] {
        var lines: [String] = []
        if !configuration.relay.enabled {
            let why = relayGiven ? "relay.enabled is false" : "relay.enabled is not set, which counts as off"
            lines.append(
                "\(why): this node neither sends, nor receives, nor relays messages; set relay.enabled: true (or --set relay.enabled=true) to use it"
            )
        }
        if configuration.enabledTransports.isEmpty {
            lines.append(
                "no transport is enabled: this node can reach no peer and no peer can reach it; enable one, e.g. transports.tcp.enabled: true"
            )
        }
        if !omittedSections.isEmpty {
            let applied = differingSections.map(Self.builtInDefault)
            let rest = differingSections.count == omittedSections.count ? "" : "the others as in Config/node.yaml"
            lines.append(
                "\(source) leaves out sections the default config has (\(omittedSections.joined(separator: ", "))); built-in defaults apply: "
                    + (applied + (rest.isEmpty ? [] : [rest])).joined(separator: "; ")
            )
        }
        return lines
    }

    /// What the built-in default of a section means, in a few words.
    static func builtInDefault(_ section: String) -> String {
        switch section {
        case "relay": "relay off"
        case "transports": "every transport off"
        case "http": "http off (no HTTP API or dashboard)"
        case "flood": "flooding off (a message with no route waits for one)"
        default: "\(section) at its built-in values (`scmesh config check` prints them)"
        }
    }
}
