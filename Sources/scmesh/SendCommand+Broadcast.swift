import Foundation
import MeshCore
import MeshNode
import NIOCore

extension SendCommand {
    /// `scmesh send --emergency --broadcast TEXT`: publishes `text` (or standard input,
    /// for `-`) on the emergency topic, which every node hears.
    func sendBroadcast(_ text: String) async throws {
        var request = PublishRequest(topic: TopicName.emergency)
        if text == "-" {
            var payload = Data()
            try await reportingErrors(json: node.json) {
                // Reading stops at the topic message limit: a larger payload is refused at once.
                var progress = TransferProgress()
                payload = Data(try readStandardInput(progress: &progress, limit: .topicMessage).readableBytesView)
            }
            request.payloadBase64 = payload.base64EncodedString()
        } else {
            request.text = text
        }
        try await node.call(.publish(request), as: PublishReply.self, render: TextReport.broadcast)
    }
}
