import MeshCore
import Synchronization

/// The simulation's traffic: messages between random pairs with a messenger's mix of
/// sizes, and the waits for their receipts.
extension MeshSimulation {
    /// A payload size as a messenger sends them: 80 % text (20–400 bytes), 15 %
    /// longer text, links and small files (1–4 KiB), 5 % pictures and voice notes
    /// (16–48 KiB); a mean of about 1.9 KiB.
    static func messengerPayloadSize(using random: inout SimulationRandom) -> Int {
        let kind = Int.random(in: 0..<100, using: &random)
        if kind < 80 { return Int.random(in: 20...400, using: &random) }
        if kind < 95 { return Int.random(in: 1024...4096, using: &random) }
        return Int.random(in: 16_384...49_152, using: &random)
    }

    /// One message the run sent.
    struct Sent: Sendable {
        var id: MessageID
        var from: Int
        var to: Int
        var hops: Int
    }

    /// Sends `count` messages between random pairs (sources drawn from `from`, all
    /// nodes when nil); no liar is source or destination.
    func sendRandom(_ count: Int, hops: [[Int]], from sources: Set<Int>?) async -> [Sent] {
        let sourceList = (sources.map { Array($0).sorted() } ?? Array(0..<nodes.count)).filter { !liars.contains($0) }
        let destinations = (0..<nodes.count).filter { !liars.contains($0) }
        var sent: [Sent] = []
        for number in 0..<count {
            let (from, to) = random.withLock { random -> (Int, Int) in
                let from = sourceList[Int.random(in: 0..<sourceList.count, using: &random)]
                var index = Int.random(in: 0..<(destinations.count - 1), using: &random)
                if destinations[index] >= from { index += 1 }
                return (from, destinations[index])
            }
            guard let router = nodes[from].router else { continue }
            let size = random.withLock { Self.messengerPayloadSize(using: &$0) }
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ number) }
            payloadBytes.add(size, ordering: .relaxed)
            do {
                let id = try await router.send(to: nodes[to].peerID, payload: payload)
                sent.append(Sent(id: id, from: from, to: to, hops: hops[from][to]))
            } catch {
                progress("send \(from) → \(to) refused: \(error)")
            }
        }
        return sent
    }

    func isDelivered(_ message: Sent) async -> Bool {
        await nodes[message.from].queue.record(message.id)?.status == .delivered
    }

    /// Polls (every virtual second) until every message in `messages` is delivered or
    /// `limit` has passed; returns how many are.
    func waitUntilDelivered(_ messages: [Sent], limit: Duration) async -> Int {
        let deadline = clock.now + limit
        var pending = messages
        var lastReport = clock.now
        while true {
            var still: [Sent] = []
            for message in pending where await !isDelivered(message) { still.append(message) }
            pending = still
            if pending.isEmpty || clock.now >= deadline { break }
            if clock.now - lastReport >= .seconds(30) {
                progress("\(pending.count) of \(messages.count) messages not yet delivered (virtual \(clock.elapsed))")
                lastReport = clock.now
            }
            try? await clock.sleep(for: .seconds(1))
        }
        return messages.count - pending.count
    }
}
