/// A source of random numbers the router draws its flood delays from; tests pass a
/// seeded one so that a run can be repeated.
public protocol MeshRandom: Sendable {
    /// A number uniformly drawn from [0, 1).
    func unit() -> Double
}

/// Draws from the system's random number generator.
public struct SystemMeshRandom: MeshRandom {
    /// Creates the source.
    public init() {}

    public func unit() -> Double { Double.random(in: 0..<1) }
}
