import MeshCore

extension MeshSimulation {
    /// For each undelivered message (the first ten): its status at the origin and
    /// which nodes hold it queued.
    func explainUndelivered(_ messages: [Sent], partitioned: Set<Int>, churned: Set<Int>) async -> [String] {
        let names = nodeNames
        // "n8: relayed n3→(n12)": its status, the neighbour it came from, and where it
        // was handed (the record's reason names the next hop's peer ID).
        func describe(_ node: SimulationNode, _ record: OutboundRecord) -> String {
            var text = "n\(node.index): \(record.status)"
            if let from = record.previousHop { text += " \(names[from.short] ?? "?")→" }
            if let reason = record.reason {
                // Peer IDs in the reason (8 hex digits) by node name.
                let words = reason.split(separator: " ", omittingEmptySubsequences: false).map {
                    names[String($0)] ?? String($0)
                }
                text += "(\(words.joined(separator: " ").replacing("handed to ", with: "")))"
            }
            return text
        }
        func role(_ index: Int) -> String {
            partitioned.contains(index) ? " (partitioned)" : churned.contains(index) ? " (restarted)" : ""
        }
        var lines: [String] = []
        for message in messages where await !isDelivered(message) {
            guard lines.count < 10 else { break }
            let record = await nodes[message.from].queue.record(message.id)
            var holders: [String] = []
            let destination = nodes[message.to].peerID
            for node in nodes where node.index != message.from {
                guard let held = await node.queue.record(message.id) else { continue }
                var text = describe(node, held)
                if held.status == .queued {
                    text +=
                        " TTL \(held.ttl.map { "\($0)" } ?? "-")\(held.flags & DataFrame.floodFlag != 0 ? " flood copy" : "")"
                    // Where the holder would send it now: its route at the end of the run.
                    let route = await node.router?.routes().first { $0.destination == destination }
                    text +=
                        route.map {
                            " [route: \(names[$0.nextHop.short] ?? "?"), \($0.hops) hops, sequence \($0.sequence ?? 0)]"
                        } ?? " [no route]"
                    if route == nil, let router = node.router { text += Self.diagnosis(router, destination, names) }
                }
                holders.append(text)
            }
            var atOrigin = record?.reason.map { " (\($0))" } ?? ""
            if record?.status == .queued {
                atOrigin += await withoutRoute(at: message.from, to: message.to, names: names, role: role)
            }
            let arrived = deliveries.copies[message.id] != nil
            var receiptTrail = ""
            if arrived {
                // The receipt is a message of its own (a derived ID) from the sink back.
                let receiptID = DeliveryReceipt.receiptMessageID(
                    for: message.id,
                    from: nodes[message.from].peerID,
                    signer: SimulationSigner(peer: nodes[message.to].peerID)
                )
                var receiptHolders: [String] = []
                for node in nodes {
                    guard let held = await node.queue.record(receiptID) else { continue }
                    var text = describe(node, held)
                    if held.status == .queued {
                        text += await withoutRoute(at: node.index, to: message.from, names: names, role: role)
                    }
                    receiptHolders.append(text)
                }
                receiptTrail = "; receipt \(receiptID.hex) [\(receiptHolders.joined(separator: ", "))]"
            }
            lines.append(
                "n\(message.from)\(role(message.from)) → n\(message.to)\(role(message.to)) (\(message.hops) hops) \(message.id.hex): at origin \(record.map { "\($0.status)" } ?? "no record")"
                    + "\(atOrigin), arrived \(arrived), relays [\(holders.joined(separator: ", "))]\(receiptTrail)"
            )
        }
        if !lines.isEmpty { lines.append(await linksDown()) }
        return lines
    }

    /// `router`'s entry and asks for `target` (``Router/routeDiagnosis(for:name:)``), in
    /// braces after a space, peers by node name.
    static func diagnosis(_ router: Router, _ target: PeerID, _ names: [String: String]) -> String {
        " {\(router.routeDiagnosis(for: target) { names[$0.short] ?? "?" })}"
    }

    /// Where node `at` holds something for `to` and has no route to it (nothing when it
    /// has one, or is down): its entry and asks, and what the nodes along a shortest
    /// path of the graph hold (``pathState(from:to:names:role:)``).
    func withoutRoute(at: Int, to: Int, names: [String: String], role: (Int) -> String) async -> String {
        let target = nodes[to].peerID
        guard let router = nodes[at].router, await !router.routes().contains(where: { $0.destination == target }) else {
            return ""
        }
        return Self.diagnosis(router, target, names)
            + "; along a shortest path: \(await pathState(from: at, to: to, names: names, role: role))"
    }

    /// What each node on a shortest path of the graph from `from` to `to` holds about
    /// `to` at the end of the run: its route (next hop, hops, sequence) or, where it has
    /// none, its entry and asks (``Router/routeDiagnosis(for:name:)``).
    func pathState(from: Int, to: Int, names: [String: String], role: (Int) -> String = { _ in "" }) async -> String {
        let distance = graph.hops(from: to)
        let target = nodes[to].peerID
        var steps: [String] = []
        var at = from
        while at != to, steps.count < 64 {
            guard let router = nodes[at].router else {
                steps.append("n\(at): down")
                break
            }
            if let route = await router.routes().first(where: { $0.destination == target }) {
                var step =
                    "n\(at)\(role(at)): \(names[route.nextHop.short] ?? "?")/\(route.hops)@\((route.sequence ?? 0) & 0xFFFFF)"
                // A route two or more hops longer than the graph's distance: what else it holds.
                if route.hops >= distance[at] + 2 { step += Self.diagnosis(router, target, names) }
                steps.append(step)
            } else {
                steps.append("n\(at)\(role(at)):\(Self.diagnosis(router, target, names))")
            }
            guard let next = graph.neighbours[at].filter({ distance[$0] == distance[at] - 1 }).min() else { break }
            at = next
        }
        return steps.joined(separator: " → ")
    }

    /// The graph's links that are not up at the end of the run (a message held for want
    /// of a route may sit behind one), by node names.
    func linksDown() async -> String {
        var linked: [Int: Set<PeerID>] = [:]
        for node in nodes {
            if let router = node.router { linked[node.index] = Set(await router.peers().map(\.peer)) }
        }
        let down = graph.edges.filter { a, b in linked[a]?.contains(nodes[b].peerID) != true }
        let names = down.prefix(20).map { "n\($0.0)–n\($0.1)" }.joined(separator: ", ")
        return
            "links down at the end: \(down.count) of \(graph.edges.count) graph links\(down.isEmpty ? "" : ": " + names)\(down.count > 20 ? ", …" : "")"
    }
}
