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
}
