import MeshCore

extension SimBench {
    /// The features of `--mix`: `full`, `minimal` or `gateway`, comma-separated.
    static func featureMix(_ text: String) throws -> [Capabilities] {
        try text.split(separator: ",").map { name in
            switch name {
            case "full": .all
            case "minimal": .none
            case "gateway": [.routing, .routeSync, .flooding]
            default: throw MeshError(.invalidArgument, "--mix: full, minimal or gateway, comma-separated; got \(name)")
            }
        }
    }

    /// The `--mix` part of the graph line; empty without a mix.
    static func mixDescription(_ mix: [Capabilities]) -> String {
        guard !mix.isEmpty else { return "" }
        let names = mix.map { $0.names.isEmpty ? "minimal" : $0 == .all ? "full" : $0.names.joined(separator: "+") }
        return "features by node, round robin: \(names.joined(separator: " / ")); "
    }
}
