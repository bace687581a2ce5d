/// Puts multi-chunk messages back together, bounded in count, bytes and time.
struct MessageAssembler {
    enum Outcome: Equatable {
        case complete([UInt8])
        case incomplete
        case duplicateChunk
        case rejected(String)
    }

    private struct Partial {
        var origin: PeerID
        var length: Int
        var buffer: [UInt8]
        var received: [Bool]
        var remaining: Int
        var startedAt: ContinuousClock.Instant
    }

    private var partials: [MessageID: Partial] = [:]
    private var reservedBytes = 0
    let limits: ReassemblyLimits
    private(set) var expired = 0

    init(limits: ReassemblyLimits) {
        self.limits = limits
    }

    var inProgress: Int { partials.count }

    mutating func add(_ frame: DataFrame, now: ContinuousClock.Instant = .now) -> Outcome {
        expire(now: now)
        let length = Int(frame.messageLength)
        // Take the partial out of the dictionary while writing into it, so its buffer
        // (up to the message size) is mutated in place instead of copied per chunk.
        if var partial = partials.removeValue(forKey: frame.messageID) {
            guard partial.origin == frame.origin, partial.length == length, partial.received.count == Int(frame.chunkCount) else {
                partials[frame.messageID] = partial
                return .rejected("chunk \(frame.chunkIndex) of \(frame.messageID) disagrees with earlier chunks")
            }
            let index = Int(frame.chunkIndex)
            if partial.received[index] {
                partials[frame.messageID] = partial
                return .duplicateChunk
            }
            partial.received[index] = true
            partial.remaining -= 1
            let offset = index * Frame.chunkSize
            partial.buffer.replaceSubrange(offset..<(offset + frame.payload.count), with: frame.payload)
            if partial.remaining == 0 {
                reservedBytes -= length
                return .complete(partial.buffer)
            }
            partials[frame.messageID] = partial
            return .incomplete
        }
        guard partials.count < limits.maxMessages else {
            return .rejected("\(partials.count) messages are already being reassembled (limit \(limits.maxMessages))")
        }
        guard reservedBytes + length <= limits.maxBytes else {
            return .rejected("reassembly would hold \(reservedBytes + length) bytes (limit \(limits.maxBytes))")
        }
        var received = [Bool](repeating: false, count: Int(frame.chunkCount))
        received[Int(frame.chunkIndex)] = true
        var buffer = [UInt8](repeating: 0, count: length)
        let offset = Int(frame.chunkIndex) * Frame.chunkSize
        buffer.replaceSubrange(offset..<(offset + frame.payload.count), with: frame.payload)
        partials[frame.messageID] = Partial(
            origin: frame.origin, length: length, buffer: buffer, received: received,
            remaining: Int(frame.chunkCount) - 1, startedAt: now)
        reservedBytes += length
        return .incomplete
    }

    /// Puts back a message that `frame` completed, missing only `frame`'s chunk (its
    /// delivery was refused), so that a retry of that chunk completes it again.
    mutating func reopen(_ frame: DataFrame, completed buffer: [UInt8], now: ContinuousClock.Instant) {
        guard partials[frame.messageID] == nil, Int(frame.chunkIndex) < Int(frame.chunkCount) else { return }
        var received = [Bool](repeating: true, count: Int(frame.chunkCount))
        received[Int(frame.chunkIndex)] = false
        partials[frame.messageID] = Partial(
            origin: frame.origin, length: buffer.count, buffer: buffer, received: received, remaining: 1, startedAt: now)
        reservedBytes += buffer.count
    }

    mutating func expire(now: ContinuousClock.Instant = .now) {
        guard !partials.isEmpty else { return }
        for (id, partial) in partials where now - partial.startedAt > limits.timeout {
            partials[id] = nil
            reservedBytes -= partial.length
            expired += 1
        }
    }
}
