import Logging
import ServiceLifecycle

// A sent message's status, and waiting for it to move on.
extension Router {
    /// What the outbound queue knows of a message this node sent.
    public func status(of message: MessageID) async -> OutboundRecord? {
        await delivery.queue.record(message)
    }

    /// Waits until a message this node sent reaches `target` (or a later status:
    /// queued < sent < delivered; failed and expired end every wait).
    /// - Parameters:
    ///   - message: the message's ID.
    ///   - target: ``MessageStatus/sent`` or ``MessageStatus/delivered``.
    ///   - timeout: how long to wait; nil waits until the task is cancelled.
    /// - Returns: the message's record when it got there.
    /// - Throws: ``MeshError`` `.unknownMessage`, `.timedOut` (the message is still on
    ///   its way: it stays queued), or `CancellationError`.
    public func waitForStatus(
        of message: MessageID,
        until target: MessageStatus,
        timeout: Duration? = nil
    ) async throws -> OutboundRecord {
        let deadline = timeout.map { clock.now + $0 }
        while true {
            let token = delivery.waiters.register(message)
            guard let record = await delivery.queue.record(message) else {
                delivery.waiters.remove(token)
                throw MeshError(
                    .unknownMessage,
                    "no message \(message.hex) was sent from this node (or its record was forgotten)"
                )
            }
            if record.hasReached(target) {
                delivery.waiters.remove(token)
                return record
            }
            try Task.checkCancellation()
            if let deadline, clock.now >= deadline {
                delivery.waiters.remove(token)
                let why = record.reason.map { "; last attempt: \($0)" } ?? ""
                throw MeshError(
                    .timedOut,
                    "message \(message.hex) is still \(record.status) after \(timeout.map { "\($0)" } ?? "")\(why); it stays queued and goes out when a route appears"
                )
            }
            await delivery.waiters.wait(token, until: deadline, clock: clock)
        }
    }
}
