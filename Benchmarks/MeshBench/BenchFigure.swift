/// One measured figure, printed by `MeshBench` next to the baseline measured in the
/// same run (these machines are shared and noisy: ratios, not absolutes, are what
/// carry across runs).
struct BenchFigure: Sendable {
    /// What was measured, e.g. "router 64 B msgs/s".
    var name: String
    /// The measured value.
    var value: Double
    /// Its unit, e.g. "msgs/s", "MB/s", "ms".
    var unit: String
    /// The baseline's name and value, when the figure has one.
    var baseline: (name: String, value: Double)?

    /// value / baseline.
    var ratio: Double? { baseline.map { $0.value == 0 ? .nan : value / $0.value } }

    /// A printable line.
    var line: String {
        var text = "\(name): \(Self.format(value)) \(unit)"
        if let baseline, let ratio {
            text +=
                "  | baseline \(baseline.name): \(Self.format(baseline.value)) \(unit)  | ratio \(Self.format(ratio))"
        }
        return text
    }

    static func format(_ value: Double) -> String {
        if value.isNaN || value.isInfinite { return "\(value)" }
        let rounded = (value * 1000).rounded() / 1000
        return value >= 100 ? String(Int(value.rounded())) : "\(rounded)"
    }
}
