import MeshCore
import Synchronization

/// A seeded random source (``SeededGenerator`` behind a lock): a test run can be
/// repeated.
final class SeededRandom: MeshRandom {
    private let generator: Mutex<SeededGenerator>

    init(seed: UInt64) { generator = Mutex(SeededGenerator(seed: seed)) }

    func unit() -> Double {
        let value = generator.withLock { $0.next() }
        return Double(value >> 11) / Double(1 << 53)
    }
}

/// SplitMix64, for reproducible graphs.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
