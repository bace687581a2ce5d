import Foundation
import MeshCore

/// The reply to `subscribe`, `unsubscribe` and `topics`: every topic the node knows.
public struct TopicsReply: Codable, Sendable, Hashable {
    /// The topics, by name: subscribed ones, relayed ones and those neighbours announced.
    public var topics: [TopicSnapshot]

    /// Creates a reply.
    public init(topics: [TopicSnapshot]) {
        self.topics = topics
    }
}

/// The reply to `publish`.
public struct PublishReply: Codable, Sendable, Hashable {
    /// The new message's ID.
    public var messageID: MessageID
    /// The topic it went to.
    public var topic: String
    /// Its payload size.
    public var bytes: Int
    /// Neighbours in this node's mesh for the topic when it went out.
    public var meshPeers: Int

    /// Creates a reply.
    public init(messageID: MessageID, topic: String, bytes: Int, meshPeers: Int) {
        self.messageID = messageID
        self.topic = topic
        self.bytes = bytes
        self.meshPeers = meshPeers
    }
}

extension ControlHandler {
    /// `topics`: every topic the node knows.
    package func topics() async -> TopicsReply {
        TopicsReply(topics: await router.topics())
    }

    /// `subscribe` (`topic`): joins the topic's mesh; replies with every topic.
    package func subscribe(topic: String?) async throws -> TopicsReply {
        try await router.subscribe(to: try topicName(topic, for: "subscribe"))
        return await topics()
    }

    /// `unsubscribe` (`topic`): leaves the topic's mesh; replies with every topic.
    package func unsubscribe(topic: String?) async throws -> TopicsReply {
        try await router.unsubscribe(from: try topicName(topic, for: "unsubscribe"))
        return await topics()
    }

    /// `publish` (`topic`, and `text` or `payload_base64`): one message to the topic.
    package func publish(_ request: PublishRequest) async throws -> PublishReply {
        let topic = try topicName(request.topic, for: "publish")
        let payload: [UInt8]
        switch (request.text, request.payloadBase64) {
        case (let text?, nil): payload = Array(text.utf8)
        case (nil, let base64?):
            guard let data = Data(base64Encoded: base64) else {
                throw MeshError(.invalidArgument, "\"payload_base64\" is not valid base64")
            }
            payload = Array(data)
        case (nil, nil): throw MeshError(.invalidArgument, "publish needs \"text\" or \"payload_base64\"")
        case (_?, _?): throw MeshError(.invalidArgument, "publish takes \"text\" or \"payload_base64\", not both")
        }
        let id = try await router.publish(payload, to: topic)
        let mesh = await router.topics().first { $0.topic == topic }?.mesh.count ?? 0
        return PublishReply(messageID: id, topic: topic, bytes: payload.count, meshPeers: mesh)
    }

    private func topicName(_ topic: String?, for command: String) throws(MeshError) -> String {
        guard let topic else {
            throw MeshError(
                .invalidArgument,
                "\(command) needs \"topic\", e.g. {\"cmd\":\"\(command)\",\"topic\":\"/scmesh/global/v1\"}"
            )
        }
        try TopicName.validate(topic)
        return topic
    }
}
