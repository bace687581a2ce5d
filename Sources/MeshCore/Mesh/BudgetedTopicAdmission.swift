/// The relay budget as the topic gossip's admission: a topic message this node would
/// pass on spends one message of `relay.max_per_hour` and of the sending neighbour's
/// share, and is not pushed further when either is spent or the battery is below its
/// floor (counted in ``RouterStats/relayRefused`` as `topicBudget`,
/// `topicNeighbourShare`, `topicBatteryLow`). The router's default when no other
/// admission is given.
struct BudgetedTopicAdmission: TopicRelayAdmission {
    let budget: RelayBudget
    let stats: StatsRecorder

    func admitTopicRelay(topic: String, origin: PeerID, from neighbour: PeerID, bytes: Int, recipients: Int) -> Bool {
        if let refusal = budget.reserve(from: neighbour) {
            let reason = "topic" + refusal.reason.prefix(1).uppercased() + refusal.reason.dropFirst()
            stats.update { $0.relayRefused[reason, default: 0] += 1 }
            return false
        }
        return true
    }
}
