import Logging
import MeshCore
import NIOCore
import Synchronization

// Inbound connections: the accept loop, admission against the limits
// (`max_inbound`, `max_per_address`), the links' bookkeeping, and the shutdown that
// closes what is left.
extension TCPTransport {
    func acceptLoop(_ server: Server, context: TransportContext) async {
        do {
            try await server.executeThenClose { inbound in
                for try await accepted in inbound {
                    await admit(accepted, context: context)
                }
            }
        } catch {
            if !Task.isCancelled {
                context.logger.warning("TCP listener stopped accepting: \(Self.reason(error))")
            }
        }
    }

    enum Admission {
        case admit
        case refuse(kind: String, why: String)
        case stopped
    }

    /// Notes a connection NIO accepted until ``admit(_:context:)`` takes it; false once
    /// the transport stopped.
    func holdUnclaimed(_ channel: any Channel, id: LinkID) -> Bool {
        state.withLock { state in
            guard state.phase != .stopped else { return false }
            state.unclaimed[id] = channel
            return true
        }
    }

    func admit(_ accepted: TCPLink.Wrapped, context: TransportContext) async {
        _ = state.withLock { $0.unclaimed.removeValue(forKey: accepted.id) }
        let logger = context.logger
        let channel = accepted.channel
        let remote = TCPAddress.text(of: channel.remoteAddress)
        let ip = channel.remoteAddress?.ipAddress ?? remote
        let maxInbound = configuration.maxInbound
        let maxPerAddress = configuration.maxPerAddress
        let admission: Admission = state.withLock { state in
            guard state.phase == .running else { return .stopped }
            if state.inboundIP.count >= maxInbound {
                return .refuse(kind: "refused.max_inbound", why: "max_inbound (\(maxInbound)) connections are open")
            }
            if state.inboundPerIP[ip, default: 0] >= maxPerAddress {
                return .refuse(
                    kind: "refused.max_per_address",
                    why: "max_per_address (\(maxPerAddress)) connections from \(ip) are open"
                )
            }
            state.inboundIP[accepted.id] = ip
            state.inboundPerIP[ip, default: 0] += 1
            state.links[accepted.id] = .some(nil)
            return .admit
        }
        switch admission {
        case .stopped:
            try? await channel.close()
            return
        case .refuse(let kind, let why):
            let key = "transports.\(name).\(kind.dropFirst("refused.".count))"
            let note = { (limiter: LogLimiter) in
                limiter.note(
                    kind,
                    "TCP refused a connection from \(remote): \(why); raise \(key) if this is legitimate"
                ) {
                    "TCP refused \(LogLimiter.formatted($0)) more connections in the last \(LogLimiter.formatted($1)): \(key)"
                }
            }
            if let limiter = limiter.withLock({ $0 }) {
                note(limiter)
            } else {
                logger.warning("TCP refused a connection from \(remote): \(why)")
            }
            try? await channel.close()
            return
        case .admit:
            break
        }
        let link = TCPLink(
            accepted,
            mtu: configuration.maxFrameSize,
            onEnded: { [weak self] id in self?.linkEnded(id) }
        )
        guard register(link) else {
            await link.close()
            return
        }
        link.watchForEnd(logger: logger)
        logger.debug("TCP inbound link \(link.id) from \(remote)", metadata: ["link": "\(link.id)"])
        context.report(.inboundLink(link))
    }

    /// Stores a new link; false when the transport stopped meanwhile (the caller closes
    /// the link). Call before `watchForEnd`, so an early end removes it again.
    func register(_ link: TCPLink) -> Bool {
        state.withLock { state in
            guard state.phase == .running else { return false }
            if state.links[link.id] != nil { state.links[link.id] = .some(link) }
            return true
        }
    }

    func linkEnded(_ id: LinkID) {
        state.withLock { state in
            state.links[id] = nil
            if let ip = state.inboundIP.removeValue(forKey: id) {
                let left = state.inboundPerIP[ip, default: 1] - 1
                state.inboundPerIP[ip] = left > 0 ? left : nil
            }
        }
    }

    /// After the accept loops ended: refuses new links and closes every open one, and
    /// every connection accepted that the loops never took.
    func shutDown() async {
        let (links, unclaimed) = state.withLock { state in
            state.phase = .stopped
            state.addresses = []
            defer { state.unclaimed = [:] }
            return (state.links.values.compactMap { $0 }, Array(state.unclaimed.values))
        }
        for channel in unclaimed {
            try? await channel.close()
        }
        for link in links {
            await link.close()
        }
    }
}
