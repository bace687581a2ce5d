import Logging
import MeshCore
import MeshStore

/// Read receipts (`messages.read_receipts`): when this node's user marks received
/// messages read, the node tells each sender in one ordinary message (sealed and
/// signed like any, docs/PROTOCOL.md §A.4): the bytes `SCMesh read v1`, then a
/// newline and a message ID (32 hex characters) per message read, at most
/// ``maximumIDs``. The sender's node takes such a message before the contact filter,
/// never shows it in its inbox, and marks those of its own messages to that peer
/// read (status `read`); IDs of messages it did not send to that peer change nothing.
public struct ReadReceipts: Sendable {
    /// The payload's first line.
    public static let magic = "SCMesh read v1"
    /// The most IDs in one receipt.
    public static let maximumIDs = 512

    /// The payloads telling a sender that `ids` were read: one per ``maximumIDs``.
    public static func payloads(for ids: [MessageID]) -> [[UInt8]] {
        stride(from: 0, to: ids.count, by: maximumIDs).map { start in
            let chunk = ids[start..<min(ids.count, start + maximumIDs)]
            return Array(([magic] + chunk.map(\.hex)).joined(separator: "\n").utf8)
        }
    }

    /// Whether `payload` is a read receipt (its first line is ``magic``).
    public static func isReceipt(_ payload: [UInt8]) -> Bool {
        payload.starts(with: Array((magic + "\n").utf8))
    }

    let history: MessageHistory
    let events: EventLog?
    let logger: Logger

    /// Handles `message` when it is a read receipt; returns whether it was one.
    /// - Throws: ``MeshError`` when the store cannot be written.
    public func take(_ message: InboundMessage) async throws -> Bool {
        guard message.topic == nil, Self.isReceipt(message.payload) else { return false }
        let lines = String(decoding: message.payload, as: UTF8.self).split(separator: "\n").dropFirst()
        let ids = lines.prefix(Self.maximumIDs).compactMap { MessageID(hex: String($0)) }
        let changed = try await history.recordReadReceipt(from: message.from, ids: ids)
        if changed > 0 {
            events?.append(
                RouterEvent(
                    RouterEvent.Kind("message_read"),
                    peer: message.from,
                    reason: "\(changed) message\(changed == 1 ? "" : "s") read",
                    messageID: ids.first
                )
            )
        }
        logger.debug("\(message.from.short) read \(changed) of this node's messages")
        return true
    }
}
