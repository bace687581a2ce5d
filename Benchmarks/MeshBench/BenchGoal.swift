/// One ratio the project has a goal for, printed under a label that does not change
/// between runs (so before and after can be compared line by line).
struct BenchGoal {
    /// The stable label, e.g. "durable queue-and-deliver 64 B / in-memory".
    var label: String
    /// The ratio measured (the figure over its same-run baseline).
    var ratio: Double?
    /// Whether a ratio above the goal is good (throughput) or below it (latency).
    var higherIsBetter: Bool
    /// The goal.
    var goal: Double

    /// The goal line for `figure` (its ratio to its baseline), when it was measured.
    static func of(_ figure: BenchFigure?, label: String, goal: Double, higherIsBetter: Bool = true) -> BenchGoal {
        BenchGoal(label: label, ratio: figure?.ratio, higherIsBetter: higherIsBetter, goal: goal)
    }

    /// A printable line: `goal <label>: ratio <r> (goal ≥ g, met|not met)`.
    var line: String {
        guard let ratio else { return "goal \(label): not measured" }
        let met = higherIsBetter ? ratio >= goal : ratio <= goal
        return
            "goal \(label): ratio \(BenchFigure.format(ratio)) (goal \(higherIsBetter ? "≥" : "≤") \(BenchFigure.format(goal)), \(met ? "met" : "not met"))"
    }
}
