import MeshCore

extension ControlHandler {
    /// `power`: makes the request's changes (each saved in the data directory), reads
    /// the power state now and says the profile and the values in effect (``PowerReply``).
    /// - Throws: `.invalidArgument` when the node runs without a power monitor, when
    ///   `profile` and `auto` come together, or naming an unknown profile, override key
    ///   or bad value.
    package func power(_ request: PowerRequest) throws -> PowerReply {
        guard let powerMonitor else {
            throw MeshError(.invalidArgument, "this node runs without a power monitor; run it with scmesh run")
        }
        var pin: PowerProfile?? = nil
        if let name = request.profile {
            guard request.auto != true else {
                throw MeshError(.invalidArgument, "give \"profile\" or \"auto\", not both")
            }
            guard let profile = PowerProfile(rawValue: name) else {
                throw MeshError(
                    .invalidArgument,
                    "unknown power profile \"\(name)\" (known: \(PowerProfile.allCases.map(\.rawValue).joined(separator: ", ")))"
                )
            }
            pin = .some(profile)
        } else if request.auto == true {
            pin = .some(nil)
        }
        if request.clearOverrides == true { try powerMonitor.clearOverrides() }
        if let assignment = request.powerOverride { try powerMonitor.setOverride(assignment) }
        if let pin { try powerMonitor.pin(pin) }
        return powerMonitor.poll()
    }
}
