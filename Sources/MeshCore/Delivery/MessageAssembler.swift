/// Puts multi-chunk messages back together, bounded in count, bytes and time — in
/// total and per neighbour (the authenticated peer whose link brought the chunks), so
/// that one peer's partial messages can never make another peer's messages wait or
/// fail.
///
/// Memory is counted as it arrives (the bytes of the chunks held), not as declared: a
/// first chunk announcing a 16 MiB message holds one chunk, not 16 MiB.
///
/// When the global budget (messages or bytes) is full, a neighbour holding less makes
/// room by evicting from a neighbour holding more: the partial message of the largest
/// holder that has gone longest without a new chunk goes first. So a few identities
/// parking almost-complete messages cannot keep an honest peer's large message out;
/// each neighbour can count on an equal share of the global budget.
struct MessageAssembler {
    enum Outcome: Equatable {
        case complete([UInt8])
        case incomplete
        case duplicateChunk
        case rejected(String)
    }

    private struct Partial {
        var origin: PeerID
        var neighbour: PeerID
        var length: Int
        var chunks: [[UInt8]?]
        var remaining: Int
        var heldBytes: Int
        var startedAt: ContinuousClock.Instant
        var lastChunkAt: ContinuousClock.Instant
    }

    private struct Share {
        var messages = 0
        var bytes = 0
    }

    private var partials: [MessageID: Partial] = [:]
    private var shares: [PeerID: Share] = [:]
    private var heldBytes = 0
    let limits: ReassemblyLimits
    private(set) var expired = 0
    /// Partial messages dropped to make room for a neighbour holding less.
    private(set) var evicted = 0

    init(limits: ReassemblyLimits) {
        self.limits = limits
    }

    var inProgress: Int { partials.count }

    /// Bytes held for partial messages from `neighbour`.
    func heldBytes(from neighbour: PeerID) -> Int { shares[neighbour]?.bytes ?? 0 }

    /// Adds one chunk that arrived over a link to `neighbour`.
    mutating func add(_ frame: DataFrame, from neighbour: PeerID, now: ContinuousClock.Instant) -> Outcome {
        expire(now: now)
        let length = Int(frame.messageLength)
        let index = Int(frame.chunkIndex)
        let size = frame.payload.count
        var share = shares[neighbour] ?? Share()
        if var partial = partials[frame.messageID] {
            guard partial.origin == frame.origin, partial.length == length,
                partial.chunks.count == Int(frame.chunkCount)
            else {
                return .rejected("chunk \(frame.chunkIndex) of \(frame.messageID) disagrees with earlier chunks")
            }
            if partial.chunks[index] != nil { return .duplicateChunk }
            if partial.remaining > 1 {
                makeRoom(messages: 0, bytes: size, for: neighbour, keeping: frame.messageID)
                share = shares[neighbour] ?? Share()
                if let refusal = refusal(adding: size, to: share, neighbour: neighbour) { return .rejected(refusal) }
            }
            partials[frame.messageID] = nil  // mutate without a copy
            partial.chunks[index] = frame.payload
            partial.remaining -= 1
            if partial.remaining == 0 {
                release(partial)
                var message: [UInt8] = []
                message.reserveCapacity(length)
                for chunk in partial.chunks { message.append(contentsOf: chunk ?? []) }
                return .complete(message)
            }
            // Bytes count against the neighbour that holds the partial message.
            hold(size, in: &partial)
            partial.lastChunkAt = now
            partials[frame.messageID] = partial
            return .incomplete
        }
        makeRoom(messages: 1, bytes: size, for: neighbour, keeping: nil)
        share = shares[neighbour] ?? Share()
        guard partials.count < limits.maxMessages else {
            return .rejected("\(partials.count) messages are already being reassembled (limit \(limits.maxMessages))")
        }
        guard share.messages < limits.maxMessagesPerPeer else {
            return .rejected(
                "\(neighbour) already has \(share.messages) messages being reassembled (limit \(limits.maxMessagesPerPeer) per peer)"
            )
        }
        if let refusal = refusal(adding: size, to: share, neighbour: neighbour) { return .rejected(refusal) }
        var chunks = [[UInt8]?](repeating: nil, count: Int(frame.chunkCount))
        chunks[index] = frame.payload
        share.messages += 1
        shares[neighbour] = share
        var partial = Partial(
            origin: frame.origin,
            neighbour: neighbour,
            length: length,
            chunks: chunks,
            remaining: Int(frame.chunkCount) - 1,
            heldBytes: 0,
            startedAt: now,
            lastChunkAt: now
        )
        hold(size, in: &partial)
        partials[frame.messageID] = partial
        return .incomplete
    }

    /// Evicts partial messages until `messages` more messages and `bytes` more bytes
    /// fit the global limits. A victim belongs to a neighbour holding more (by the
    /// measure that is short) than `neighbour` would after adding; of those, the
    /// partial that has waited longest for a chunk goes first. Stops when none is left.
    private mutating func makeRoom(messages: Int, bytes: Int, for neighbour: PeerID, keeping kept: MessageID?) {
        while partials.count + messages > limits.maxMessages || heldBytes + bytes > limits.maxBytes {
            let mine = shares[neighbour] ?? Share()
            let byCount = partials.count + messages > limits.maxMessages
            let larger = shares.filter { peer, share in
                peer != neighbour
                    && (byCount ? share.messages > mine.messages + messages : share.bytes > mine.bytes + bytes)
            }
            guard
                let victim = partials.filter({ larger[$0.value.neighbour] != nil && $0.key != kept })
                    .min(by: { $0.value.lastChunkAt < $1.value.lastChunkAt })
            else { return }
            partials[victim.key] = nil
            release(victim.value)
            evicted += 1
        }
    }

    private func refusal(adding size: Int, to share: Share, neighbour: PeerID) -> String? {
        if heldBytes + size > limits.maxBytes {
            return "reassembly would hold \(heldBytes + size) bytes (limit \(limits.maxBytes))"
        }
        if share.bytes + size > limits.maxBytesPerPeer {
            return
                "reassembly would hold \(share.bytes + size) bytes from \(neighbour) (limit \(limits.maxBytesPerPeer) per peer)"
        }
        return nil
    }

    private mutating func hold(_ size: Int, in partial: inout Partial) {
        partial.heldBytes += size
        heldBytes += size
        shares[partial.neighbour, default: Share()].bytes += size
    }

    private mutating func release(_ partial: Partial) {
        heldBytes -= partial.heldBytes
        guard var share = shares[partial.neighbour] else { return }
        share.messages -= 1
        share.bytes -= partial.heldBytes
        shares[partial.neighbour] = share.messages <= 0 ? nil : share
    }

    /// Puts back a message that `frame` completed, missing only `frame`'s chunk (its
    /// delivery was refused), so that a retry of that chunk completes it again. It
    /// counts against `neighbour`'s share even above the limits (it was admitted).
    mutating func reopen(
        _ frame: DataFrame,
        completed buffer: [UInt8],
        from neighbour: PeerID,
        now: ContinuousClock.Instant
    ) {
        let count = Int(frame.chunkCount)
        guard partials[frame.messageID] == nil, Int(frame.chunkIndex) < count else { return }
        var chunks: [[UInt8]?] = []
        chunks.reserveCapacity(count)
        for index in 0..<count {
            let start = index * Frame.chunkSize
            chunks.append(
                index == Int(frame.chunkIndex) ? nil : Array(buffer[start..<min(buffer.count, start + Frame.chunkSize)])
            )
        }
        var partial = Partial(
            origin: frame.origin,
            neighbour: neighbour,
            length: buffer.count,
            chunks: chunks,
            remaining: 1,
            heldBytes: 0,
            startedAt: now,
            lastChunkAt: now
        )
        shares[neighbour, default: Share()].messages += 1
        hold(buffer.count - frame.payload.count, in: &partial)
        partials[frame.messageID] = partial
    }

    /// Drops partial messages older than the timeout.
    mutating func expire(now: ContinuousClock.Instant) {
        guard !partials.isEmpty else { return }
        for (id, partial) in partials where now - partial.startedAt > limits.timeout {
            partials[id] = nil
            release(partial)
            expired += 1
        }
    }
}
