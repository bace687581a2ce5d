#if canImport(CAvahi)

/// Identifies one service instance as Avahi reports it: the same name may appear on
/// several interfaces and protocols, and each is a separate entry.
struct AvahiServiceKey: Hashable, Sendable, CustomStringConvertible {
    /// Avahi's interface index (`AvahiIfIndex`).
    var interface: Int32
    /// Avahi's protocol (`AvahiProtocol`: 0 = IPv4, 1 = IPv6).
    var proto: Int32
    /// The service instance name, e.g. `scmesh-1a2b3c4d`.
    var name: String
    /// The service type, e.g. `_scmesh._tcp`.
    var type: String
    /// The domain, normally `local`.
    var domain: String

    var description: String { "'\(name)'.\(type).\(domain) (if \(interface), proto \(proto))" }
}

/// A resolved service, copied out of the resolver callback.
struct AvahiResolvedService: Sendable {
    var key: AvahiServiceKey
    var hostName: String
    /// The address as Avahi prints it (no scope suffix).
    var address: String
    var isIPv6: Bool
    var port: UInt16
    /// The TXT strings as published (`key=value` or `key`).
    var txt: [String]
    /// The service was announced by this host.
    var isLocal: Bool
}

/// The state of the Avahi client (the connection to the daemon).
enum AvahiClientStatus: Sendable, Equatable {
    case registering, running, collision, failure, connecting
}

/// The state of our entry group (the published service).
enum AvahiGroupStatus: Sendable, Equatable {
    case uncommitted, registering, established, collision, failure
}

/// What a C callback saw. Callbacks copy their arguments into one of these, yield
/// it and return; everything else happens in Swift, off the poll thread.
enum AvahiEvent: Sendable {
    case client(generation: UInt64, status: AvahiClientStatus, error: Int32)
    case group(generation: UInt64, status: AvahiGroupStatus, error: Int32)
    case browseNew(generation: UInt64, key: AvahiServiceKey, ownService: Bool)
    case browseRemove(generation: UInt64, key: AvahiServiceKey)
    case browseFailure(generation: UInt64, error: Int32)
    case resolved(generation: UInt64, service: AvahiResolvedService)
    case resolveFailure(generation: UInt64, key: AvahiServiceKey, error: Int32)

    var generation: UInt64 {
        switch self {
        case .client(let g, _, _), .group(let g, _, _), .browseNew(let g, _, _), .browseRemove(let g, _),
            .browseFailure(let g, _), .resolved(let g, _), .resolveFailure(let g, _, _):
            return g
        }
    }
}

#endif
