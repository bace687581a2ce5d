#if canImport(CBlueZ)
import CBlueZ
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MeshCore
import Synchronization

extension BLETransport {
    /// Accepts channels until the task is cancelled, then closes the listener.
    func acceptLoop(listenFD: Int32, context: TransportContext) async {
        let logger = context.logger
        // A remote can make channels fail at will: one line per kind per 10 s plus a count.
        let failures = LogLimiter(logger: logger)
        failureLog.withLock { $0 = failures }
        defer { _ = Glibc.close(listenFD) }
        while isRunningOrStarting {
            do {
                guard let (fd, peer) = try L2CAP.accept(listenFD) else {
                    try await FDReactor.shared.wait(listenFD, for: .readable)
                    continue
                }
                let type: BLEPeerAddress.AddressType = peer.l2_bdaddr_type == 2 ? .random : .public
                let remote = L2CAP.addressBytes(peer)
                let text =
                    (try? BLEPeerAddress(bytes: remote, type: type, psm: 0)).map { "\($0.deviceAddress)/\($0.type)" }
                    ?? "unknown"
                do {
                    let link = try await makeLink(fd: fd, remoteAddress: text)
                    // A channel from a device with a GATT link to us may be that link's move.
                    if !offerToGATTLink(link, remoteAddress: text, context: context) {
                        context.report(.inboundLink(link))
                    }
                } catch {
                    _ = Glibc.close(fd)
                    failures.note("dropped_inbound", "BLE: dropped an inbound channel from \(text): \(error)") {
                        "BLE: dropped \(LogLimiter.formatted($0)) more inbound channels in the last \(LogLimiter.formatted($1))"
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                guard isRunningOrStarting else { return }
                failures.note("accept_failed", "BLE: accept failed: \(error)") {
                    "BLE: accept failed \(LogLimiter.formatted($0)) more times in the last \(LogLimiter.formatted($1))"
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    func connect(local: BLEPeerAddress, remote: BLEPeerAddress) async throws -> SeqPacketLink {
        let fd: Int32
        do {
            fd = try L2CAP.socket(
                local: local.bytes,
                type: local.type,
                psm: 0,
                security: configuration.securityLevel,
                receiveMTU: Self.defaultMTU
            )
        } catch {
            throw MeshError(.dialFailed, "BLE dial to \(remote) failed: \(error)", cause: error)
        }
        do {
            if try !L2CAP.startConnect(fd, to: remote) {
                try await waitConnected(fd)
            }
            return try await makeLink(fd: fd, remoteAddress: remote.description)
        } catch let error as SystemError {
            _ = Glibc.close(fd)
            throw MeshError(.dialFailed, "BLE dial to \(remote) failed: \(Self.explain(error))", cause: error)
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
    }

    /// Pauses discovery for the first dial in flight. The kernel connects to an LE device
    /// when its scan sees the device's advertising again; during discovery the controller
    /// filters duplicates, so a device already reported would only be seen again when
    /// discovery ends (~10 s later).
    func beginDial() async {
        let (first, mgmt) = state.withLock { state -> (Bool, MgmtSocket?) in
            state.dialsInFlight += 1
            return (state.dialsInFlight == 1, state.mgmt)
        }
        if first, let mgmt {
            _ = try? await mgmt.command(
                MgmtSocket.Opcode.stopDiscovery,
                index: configuration.adapterIndex,
                [MgmtSocket.leDiscoveryType]
            )
        }
    }

    /// Resumes discovery after the last dial in flight.
    func endDial() async {
        let (last, mgmt) = state.withLock { state -> (Bool, MgmtSocket?) in
            state.dialsInFlight -= 1
            return (state.dialsInFlight == 0 && state.phase == .running, state.mgmt)
        }
        if last, let mgmt, let logger = state.withLock({ $0.logger }) {
            await startDiscovery(mgmt: mgmt, logger: logger)
        }
    }

    func waitConnected(_ fd: Int32) async throws {
        while true {
            try await FDReactor.shared.wait(fd, for: .writable)
            let pending = Posix.socketError(fd)
            if pending != 0 { throw SystemError("connect(L2CAP LE)", errno: pending) }
            var probe = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&probe, 1, 0) == 1, probe.revents & Int16(POLLOUT) != 0 { return }
        }
    }

    func makeLink(fd: Int32, remoteAddress: String) async throws -> SeqPacketLink {
        let (send, receive) = try L2CAP.mtus(fd)
        let link = try SeqPacketLink(
            adopting: fd,
            transportName: name,
            remoteAddress: remoteAddress,
            mtu: send,
            receiveMTU: max(receive, 1),
            onClose: { [weak self] id in self?.forget(id) },
            unsentBytes: { Int(cbluez_unsent_bytes($0)) },
            runsOnReactor: configuration.linkExecutor == .reactor
        )
        let accepted = state.withLock { state -> Bool in
            guard state.phase == .running || state.phase == .starting else { return false }
            state.links[link.id] = link
            return true
        }
        if !accepted {
            await link.close()
            throw MeshError(.notRunning, "the ble transport stopped")
        }
        return link
    }

    func forget(_ id: LinkID) {
        state.withLock { _ = $0.links.removeValue(forKey: id) }
    }

    var isRunning: Bool { state.withLock { $0.phase == .running } }
    var isRunningOrStarting: Bool { state.withLock { $0.phase == .running || $0.phase == .starting } }
}
#endif
