/// The version of SCMesh (`scmesh --version`), kept here and nowhere else.
public enum SCMeshVersion {
    /// The release, as semantic version text.
    public static let current = "0.15.0"
    /// The wire protocol version (docs/PROTOCOL.md).
    public static let wireProtocol = 1

    /// What `scmesh --version` prints: `scmesh 0.15.0 (wire protocol 1)`.
    public static var description: String { "scmesh \(current) (wire protocol \(wireProtocol))" }
}
