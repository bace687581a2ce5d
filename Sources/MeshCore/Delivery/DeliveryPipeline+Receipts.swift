import Logging

extension DeliveryPipeline {
    /// The signed receipt for a message this node is taking custody of, ready to
    /// queue (the sink queues it with the message, ``MessageSink/accept(_:queueing:in:)``);
    /// nil without a ``ReceiptSigner`` or for this node's own message. Its ID is
    /// derived from the message's, so a second copy of the message makes the same one.
    /// - Parameters:
    ///   - id: the message's ID.
    ///   - sender: the message's origin, who gets the receipt.
    ///   - content: the message's plaintext (after opening, for a sealed message).
    /// - Throws: when the receipt cannot be sealed; the caller then does not
    ///   acknowledge the message, so the sender retries.
    func makeReceipt(for id: MessageID, from sender: PeerID, content: [UInt8]) throws -> OutboundMessage? {
        guard let receipts, sender != localPeerID else { return nil }
        let receiptID = DeliveryReceipt.receiptMessageID(for: id, from: sender, signer: receipts)
        let receipt = DeliveryReceipt.sign(messageID: id, content: content, sender: sender, signer: receipts)
        var payload = receipt.encoded
        var flags = DataFrame.receiptFlag
        if let sealer, configuration.sealing == .always || !hasLink(to: sender) {
            // Like any message: sealed when a relay may carry it.
            payload = try seal(
                payload,
                with: sealer,
                to: sender,
                binding: SealBinding(messageID: receiptID, flags: flags)
            )
            flags |= DataFrame.sealedFlag
        }
        return OutboundMessage(id: receiptID, destination: sender, payload: payload, flags: flags)
    }

    /// Starts sending a receipt the sink queued.
    func receiptQueued(_ receipt: OutboundMessage) {
        scheduler.schedule(.message(receipt.id, receipt.destination))
    }

    /// Takes a receipt that arrived from `origin`: when it is a valid receipt by the
    /// destination of a message this node sent, over the bytes that were sent, the
    /// message becomes ``MessageStatus/delivered``. Anything else is counted, by
    /// reason, and changes nothing.
    /// - Returns: whether the receipt is authentic (signed by `origin` for a message
    ///   this node sent to it), whatever it changed; only then may its ID be
    ///   remembered as seen.
    @discardableResult
    func acceptReceipt(_ payload: [UInt8], from origin: PeerID, transport: String) async -> Bool {
        guard let receipts else {
            countReceipt(
                ignored: "noSigner",
                origin: origin,
                transport: transport,
                detail: "this router checks no receipts"
            )
            return false
        }
        let receipt: DeliveryReceipt
        do {
            receipt = try DeliveryReceipt(decoding: payload)
        } catch {
            countReceipt(rejected: "malformed", origin: origin, transport: transport, detail: error.message)
            return false
        }
        guard let record = await queue.record(receipt.messageID), record.flags & DataFrame.receiptFlag == 0,
            record.origin == nil
        else {
            countReceipt(
                ignored: "unknownMessage",
                origin: origin,
                transport: transport,
                detail: "no message \(receipt.messageID.hex) was sent from here"
            )
            return false
        }
        guard record.destination == origin else {
            countReceipt(
                rejected: "notFromDestination",
                origin: origin,
                transport: transport,
                detail: "receipt for message \(receipt.messageID.hex) to \(record.destination) came from \(origin)"
            )
            return false
        }
        guard receipts.verify(receipt.signature, of: receipt.signedBytes(sender: localPeerID), by: origin) else {
            countReceipt(
                rejected: "badSignature",
                origin: origin,
                transport: transport,
                detail: "receipt for message \(receipt.messageID.hex) is not signed by \(origin)"
            )
            return false
        }
        guard receipt.contentDigest == record.contentDigest else {
            countReceipt(
                rejected: "digestMismatch",
                origin: origin,
                transport: transport,
                detail: "receipt for message \(receipt.messageID.hex) is for other content than was sent"
            )
            return true
        }
        guard !record.status.isFinal else {
            countReceipt(
                ignored: record.status == .delivered ? "alreadyDelivered" : "finished",
                origin: origin,
                transport: transport,
                detail: "message \(receipt.messageID.hex) is \(record.status) already"
            )
            return true
        }
        // The receipt can overtake the hop acknowledgement's bookkeeping: then the
        // transport it came back on stands in for the one the message went out on.
        await queue.update(
            receipt.messageID,
            to: .delivered,
            transport: record.transport == nil ? transport : nil,
            reason: nil
        )
        waiters.notify(receipt.messageID)
        stats.update { $0.receiptsAccepted += 1 }
        bus.emit(
            .message(.messageDelivered, id: receipt.messageID, peer: origin, transport: record.transport ?? transport)
        )
        return true
    }

    private func countReceipt(rejected reason: String, origin: PeerID, transport: String, detail: String) {
        stats.update { $0.receiptsRejected[reason, default: 0] += 1 }
        bus.emit(.receiptRejected(transport: transport, peer: origin, reason: "\(reason): \(detail)"))
        logger.debug("receipt rejected (\(reason)): \(detail)")
    }

    private func countReceipt(ignored reason: String, origin: PeerID, transport: String, detail: String) {
        stats.update { $0.receiptsIgnored[reason, default: 0] += 1 }
        logger.debug("receipt ignored (\(reason)): \(detail)")
    }
}
