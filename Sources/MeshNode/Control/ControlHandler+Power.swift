import MeshCore

extension ControlHandler {
    /// `power`: reads the power state now and says the profile and the values in
    /// effect (``PowerReply``).
    /// - Throws: `.invalidArgument` when the node runs without a power monitor.
    package func power() throws -> PowerReply {
        guard let powerMonitor else {
            throw MeshError(.invalidArgument, "this node runs without a power monitor; run it with scmesh run")
        }
        return powerMonitor.poll()
    }
}
