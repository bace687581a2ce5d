import MeshCore

extension TextReport {
    /// `scmesh topics` (and `subscribe` / `unsubscribe`): one row per topic.
    public static func topics(_ reply: TopicsReply) -> String {
        guard !reply.topics.isEmpty else { return "no topics (subscribe with: scmesh subscribe /scmesh/global/v1)" }
        var rows = [["TOPIC", "SUBSCRIBED", "RELAYING", "DISTANCE", "MESH", "PEERS", "CACHED"]]
        for topic in reply.topics {
            rows.append([
                escaped(topic.topic), topic.subscribed ? "yes" : "no", topic.relaying ? "yes" : "no",
                topic.distance.map(String.init) ?? "-", String(topic.mesh.count), String(topic.peers.count),
                String(topic.cached),
            ])
        }
        return table(rows)
    }

    /// `scmesh publish`.
    public static func published(_ reply: PublishReply) -> String {
        "\(reply.messageID.hex)  published on \(escaped(reply.topic)) (\(reply.bytes) bytes, \(reply.meshPeers) mesh peer\(reply.meshPeers == 1 ? "" : "s"))"
    }

    /// `scmesh send --emergency --broadcast`.
    public static func broadcast(_ reply: PublishReply) -> String {
        "\(reply.messageID.hex)  emergency broadcast to every node within reach (\(reply.bytes) bytes, \(reply.meshPeers) neighbour\(reply.meshPeers == 1 ? "" : "s") now)"
    }
}
