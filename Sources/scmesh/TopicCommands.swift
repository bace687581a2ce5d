import ArgumentParser
import Foundation
import MeshCore
import MeshNode
import NIOCore

/// `scmesh subscribe TOPIC`.
struct SubscribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Subscribe the running node to a topic (kept across restarts); its messages land in the inbox."
    )

    @OptionGroup var node: NodeOptions

    @Argument(help: "The topic, e.g. /scmesh/global/v1.")
    var topic: String

    func run() async throws {
        try await node.call(.subscribe(topic: topic), as: TopicsReply.self, render: TextReport.topics)
    }
}

/// `scmesh unsubscribe TOPIC`.
struct UnsubscribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unsubscribe",
        abstract: "Unsubscribe the running node from a topic (also a default one; kept across restarts)."
    )

    @OptionGroup var node: NodeOptions

    @Argument(help: "The topic, e.g. /scmesh/global/v1.")
    var topic: String

    func run() async throws {
        try await node.call(.unsubscribe(topic: topic), as: TopicsReply.self, render: TextReport.topics)
    }
}

/// `scmesh topics`.
struct TopicsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "topics",
        abstract: "List the topics the node knows: subscribed, relayed, mesh and peers."
    )

    @OptionGroup var node: NodeOptions

    func run() async throws {
        try await node.call(.topics, as: TopicsReply.self, render: TextReport.topics)
    }
}

/// `scmesh publish TOPIC TEXT|-`.
struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish a signed message on a topic and print its ID."
    )

    @OptionGroup var node: NodeOptions

    @Argument(help: "The topic, e.g. /scmesh/global/v1.")
    var topic: String

    @Argument(help: "The message text, or - to read the payload (any bytes, at most 60000) from standard input.")
    var text: String

    func run() async throws {
        var request = PublishRequest(topic: topic)
        if text == "-" {
            // Reading stops at the topic message limit: a larger payload is refused at once.
            try await reportingErrors(json: node.json) {
                var progress = TransferProgress()
                let payload = try readStandardInput(progress: &progress, limit: .topicMessage)
                request.payloadBase64 = Data(payload.readableBytesView).base64EncodedString()
            }
        } else {
            request.text = text
        }
        try await node.call(.publish(request), as: PublishReply.self, render: TextReport.published)
    }
}
