/// A random geometric graph: nodes at uniform random points of the unit square,
/// linked when closer than a radius chosen for a target mean degree, then made
/// connected by linking each stray component to its nearest node outside it.
public struct SimulationGraph: Sendable {
    /// Node positions in the unit square.
    public let positions: [(x: Double, y: Double)]
    /// Neighbours of each node, ascending.
    public let neighbours: [[Int]]
    /// The radius used.
    public let radius: Double
    /// Edges added to connect stray components.
    public let bridges: Int

    /// Every edge once, as (lower, higher).
    public var edges: [(Int, Int)] {
        neighbours.enumerated().flatMap { node, others in others.filter { $0 > node }.map { (node, $0) } }
    }

    /// The mean number of neighbours.
    public var meanDegree: Double {
        Double(neighbours.reduce(0) { $0 + $1.count }) / Double(max(1, neighbours.count))
    }

    /// Builds a connected graph of `count` nodes.
    /// - Parameters:
    ///   - targetDegree: the mean degree the radius aims at (border effects included).
    ///   - random: the generator positions are drawn from.
    public init(count: Int, targetDegree: Double, random: inout some RandomNumberGenerator) {
        var positions: [(x: Double, y: Double)] = []
        for _ in 0..<count {
            positions.append((Double.random(in: 0..<1, using: &random), Double.random(in: 0..<1, using: &random)))
        }
        self.positions = positions
        // Mean degree of a random geometric graph in the unit square with border
        // effects: (n − 1)(πr² − 8r³/3 + r⁴/2). Solve for r by bisection.
        func degree(_ r: Double) -> Double {
            Double(count - 1) * (Double.pi * r * r - 8 * r * r * r / 3 + r * r * r * r / 2)
        }
        var (low, high) = (0.0, 1.0)
        for _ in 0..<60 {
            let mid = (low + high) / 2
            if degree(mid) < targetDegree { low = mid } else { high = mid }
        }
        radius = high
        var sets = [Set<Int>](repeating: [], count: count)
        func distance2(_ a: Int, _ b: Int) -> Double {
            let dx = positions[a].x - positions[b].x
            let dy = positions[a].y - positions[b].y
            return dx * dx + dy * dy
        }
        // A grid of cells of the radius' size: only neighbouring cells are compared.
        let cells = max(1, Int(1 / radius))
        var grid: [Int: [Int]] = [:]
        func cell(_ node: Int) -> (Int, Int) {
            (
                min(cells - 1, Int(positions[node].x * Double(cells))),
                min(cells - 1, Int(positions[node].y * Double(cells)))
            )
        }
        for node in 0..<count {
            let (cx, cy) = cell(node)
            grid[cx * cells + cy, default: []].append(node)
        }
        let r2 = radius * radius
        for node in 0..<count {
            let (cx, cy) = cell(node)
            for dx in -1...1 {
                for dy in -1...1 {
                    let (x, y) = (cx + dx, cy + dy)
                    guard (0..<cells).contains(x), (0..<cells).contains(y) else { continue }
                    for other in grid[x * cells + y] ?? [] where other != node && distance2(node, other) <= r2 {
                        sets[node].insert(other)
                    }
                }
            }
        }
        // Connect: link each component other than node 0's, in turn, to its nearest
        // node outside it, until one component is left.
        var bridges = 0
        while true {
            let component = Self.components(sets)
            let main = component[0]
            guard let stray = component.firstIndex(where: { $0 != main }) else { break }
            let strayID = component[stray]
            var best: (Int, Int, Double)?
            for a in 0..<count where component[a] == strayID {
                for b in 0..<count where component[b] != strayID {
                    let d = distance2(a, b)
                    if best == nil || d < best!.2 { best = (a, b, d) }
                }
            }
            guard let (a, b, _) = best else { break }
            sets[a].insert(b)
            sets[b].insert(a)
            bridges += 1
        }
        self.bridges = bridges
        neighbours = sets.map { $0.sorted() }
    }

    /// The component label of each node.
    static func components(_ sets: [Set<Int>]) -> [Int] {
        var label = [Int](repeating: -1, count: sets.count)
        for start in sets.indices where label[start] < 0 {
            label[start] = start
            var stack = [start]
            while let node = stack.popLast() {
                for other in sets[node] where label[other] < 0 {
                    label[other] = start
                    stack.append(other)
                }
            }
        }
        return label
    }

    /// Hop counts from `source` to every node (breadth first); −1 where unreachable.
    public func hops(from source: Int) -> [Int] {
        var distance = [Int](repeating: -1, count: neighbours.count)
        distance[source] = 0
        var frontier = [source]
        while !frontier.isEmpty {
            var next: [Int] = []
            for node in frontier {
                for other in neighbours[node] where distance[other] < 0 {
                    distance[other] = distance[node] + 1
                    next.append(other)
                }
            }
            frontier = next
        }
        return distance
    }
}
