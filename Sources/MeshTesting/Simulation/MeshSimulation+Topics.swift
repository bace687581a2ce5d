import MeshCore
import Synchronization

extension MeshSimulation {
    /// The topic phase, once every direct message is settled (no partition, no node
    /// down): `topicShare` of the nodes subscribe to one topic, the gossip mesh forms,
    /// `topicMessages` messages of 200 bytes are published from random nodes one a
    /// virtual second, and the run counts which subscribers got which, and the topic
    /// frames the routers wrote.
    func runTopics(into report: inout SimulationReport) async {
        let topic = "/scmesh/sim/bench/v1"
        let want = max(2, Int((Double(nodes.count) * configuration.topicShare).rounded()))
        let subscribers = random.withLock { random in Set(Array(0..<nodes.count).shuffled(using: &random).prefix(want)) }
        progress("topics: \(subscribers.count) nodes subscribe to \(topic)")
        for index in subscribers.sorted() {
            do { try await nodes[index].router?.subscribe(to: topic) } catch { progress("n\(index) could not subscribe: \(error)") }
        }
        try? await clock.sleep(for: .seconds(20))  // subscriptions spread, meshes graft
        var before = 0
        for node in nodes { before += await node.router?.stats().topics.transmissions ?? 0 }
        var published: [(id: MessageID, from: Int)] = []
        for number in 0..<configuration.topicMessages {
            let from = random.withLock { Int.random(in: 0..<nodes.count, using: &$0) }
            let payload = (0..<200).map { UInt8(truncatingIfNeeded: $0 &+ number) }
            do {
                if let id = try await nodes[from].router?.publish(payload, to: topic) { published.append((id, from)) }
            } catch {
                progress("publish from n\(from) refused: \(error)")
            }
            try? await clock.sleep(for: .seconds(1))
        }
        try? await clock.sleep(for: .seconds(30))  // pushes, then IHAVE/IWANT repair
        var after = 0
        for node in nodes { after += await node.router?.stats().topics.transmissions ?? 0 }
        var expected = 0
        var got = 0
        var duplicates = 0
        for message in published {
            let copies = deliveries.topicCopies(message.id)
            for subscriber in subscribers where subscriber != message.from {
                expected += 1
                if let count = copies[subscriber] {
                    got += 1
                    duplicates += count - 1
                }
            }
        }
        report.topicSubscribers = subscribers.count
        report.topicPublished = published.count
        report.topicExpected = expected
        report.topicDelivered = got
        report.topicDuplicates = duplicates
        report.topicTransmissions = after - before
    }
}
