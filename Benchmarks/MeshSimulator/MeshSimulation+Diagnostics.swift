import MeshCore
import Synchronization

/// Diagnostic lines of the report: what the routes missing at the settled mark are
/// missing, and where each phase's route requests went.
extension MeshSimulation {
    /// Each node's name (`n` and its index) by its peer ID's short form, as the
    /// diagnostic lines write it.
    var nodeNames: [String: String] {
        Dictionary(nodes.map { ($0.peerID.short, "n\($0.index)") }, uniquingKeysWith: { first, _ in first })
    }

    /// Explains the routes missing at the settled mark (a diagnostic line of the
    /// report): how many, to how many origins, and for the origins most often missing
    /// how many nodes lack one, how many of those have a neighbour whose route does
    /// not go through them, and the fewest hops such a route would have from them.
    func missingRoutes(_ tables: [[Int: RouteSnapshot]], index: [PeerID: Int]) async -> String {
        var lacking: [Int: [Int]] = [:]
        for node in nodes.indices where nodes[node].router != nil {
            for target in nodes.indices where target != node && tables[node][target] == nil {
                lacking[target, default: []].append(node)
            }
        }
        let total = lacking.values.reduce(0) { $0 + $1.count }
        var text = "settled mark: \(total) routes missing, to \(lacking.count) origins"
        var details = 0
        for (target, without) in lacking.sorted(by: { $0.value.count > $1.value.count }).prefix(5) {
            var helped = 0
            var fewest = Int.max
            for node in without {
                let hops = graph.neighbours[node].compactMap { other -> Int? in
                    guard let theirs = tables[other][target], index[theirs.nextHop] != node else { return nil }
                    return theirs.hops + 1
                }
                if let best = hops.min() {
                    helped += 1
                    fewest = min(fewest, best)
                }
            }
            text += "; n\(target): \(without.count) lack it, \(helped) with a neighbour's route"
            if fewest != .max { text += " (fewest \(fewest) hops)" }
            if details < 2, let node = without.first {
                details += 1
                text += " [at n\(node):\(await withoutRoute(at: node, to: target, names: nodeNames) { _ in "" })]"
            }
        }
        return text
    }

    /// The route request counters of every router, summed (retired routers' included):
    /// taken at the phase marks to split them by phase.
    func requestCounters() async -> [String: Int] {
        var total: [String: Int] = [:]
        for node in nodes {
            if let router = node.router { total.merge(await router.stats().routeRequests, uniquingKeysWith: +) }
            total.merge(node.retiredStats.withLock { $0.routeRequests }, uniquingKeysWith: +)
        }
        return total
    }

    /// `now − before`, counter by counter, as `name value` pairs in name order.
    static func counterLine(_ now: [String: Int], since before: [String: Int]) -> String {
        now.keys.sorted().compactMap { key in
            let value = now[key, default: 0] - before[key, default: 0]
            return value == 0 ? nil : "\(key) \(value)"
        }.joined(separator: ", ")
    }

    /// Per phase (steady, partition, churn): the route request counters (`marks` holds
    /// them at each phase's start and at the end), and the ROUTE REQUEST frames by
    /// target: how many for the partitioned nodes, how many for the churned, and the
    /// busiest targets.
    func requestLines(_ marks: [[String: Int]], partitioned: Set<Int>, churned: [Int]) -> [String] {
        let cutIDs = Set(partitioned.map { nodes[$0].peerID.bytes })
        let downIDs = Set(churned.map { nodes[$0].peerID.bytes })
        var lines: [String] = []
        for (phase, name) in [(1, "steady"), (2, "partition"), (3, "churn")] where phase < marks.count {
            lines.append("\(name) request counters: \(Self.counterLine(marks[phase], since: marks[phase - 1]))")
            let byTarget = tally.requestsByTarget(phase: phase)
            let cut = byTarget.filter { cutIDs.contains($0.key) }.values.reduce(0, +)
            let down = byTarget.filter { downIDs.contains($0.key) }.values.reduce(0, +)
            let top = byTarget.sorted { $0.value > $1.value }.prefix(5).map { target, frames in
                let role = cutIDs.contains(target) ? " (cut off)" : downIDs.contains(target) ? " (churned)" : ""
                return "\(target.prefix(4).map { String($0, radix: 16) }.joined())…\(role): \(frames)"
            }
            lines.append(
                "\(name) requests: \(byTarget.values.reduce(0, +)) frames for \(byTarget.count) targets; for the partitioned nodes \(cut), "
                    + "for the churned \(down); busiest \(top.joined(separator: ", "))"
            )
        }
        return lines
    }
}
