import MeshCore

extension MeshSimulation {
    /// Explains the routes missing at the settled mark (a diagnostic line of the
    /// report): how many, to how many origins, and for the origins most often missing
    /// how many nodes lack one, how many of those have a neighbour whose route does
    /// not go through them, and the fewest hops such a route would have from them.
    func missingRoutes(_ tables: [[Int: RouteSnapshot]], index: [PeerID: Int]) -> String {
        var lacking: [Int: [Int]] = [:]
        for node in nodes.indices where nodes[node].router != nil {
            for target in nodes.indices where target != node && tables[node][target] == nil {
                lacking[target, default: []].append(node)
            }
        }
        let total = lacking.values.reduce(0) { $0 + $1.count }
        var text = "settled mark: \(total) routes missing, to \(lacking.count) origins"
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
        }
        return text
    }
}
