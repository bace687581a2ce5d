#if canImport(CBlueZ)
import Logging
import MeshCore
import Synchronization

/// Moving GATT links to L2CAP channels (docs/PROTOCOL.md §C.1, "Moving a link to
/// L2CAP"; the two directions' switch is ``GATTLink``'s).
extension BLETransport {
    /// How long an L2CAP channel offered to a GATT link waits for the remote's marker
    /// before it becomes a link of its own.
    static let offeredChannelDeadline: Duration = .seconds(10)

    /// Runs `job` as a child task of ``listen(context:)``; dropped when it is ending.
    func spawn(_ job: @escaping @Sendable () async -> Void) {
        _ = state.withLock { $0.jobs }?.yield(job)
    }

    /// Tracks a peripheral GATT link until it closes.
    func track(_ link: GATTLink) {
        let key = ObjectIdentifier(link)
        state.withLock { $0.peripheralGATTLinks[key] = link }
    }

    /// Forgets a closed peripheral GATT link.
    func untrack(_ key: ObjectIdentifier) {
        state.withLock { _ = $0.peripheralGATTLinks.removeValue(forKey: key) }
    }

    /// Offers a channel accepted from `remoteAddress` (`"<bdaddr>/<type>"`) to the GATT
    /// link from the same device; true when one took it. A channel the remote does not
    /// claim with its marker within ``offeredChannelDeadline`` is reported as an inbound
    /// link after all.
    func offerToGATTLink(_ channel: SeqPacketLink, remoteAddress: String, context: TransportContext) -> Bool {
        let gattAddress = "\(remoteAddress)/gatt"
        let candidates = state.withLock {
            $0.peripheralGATTLinks.values.filter { $0.remoteAddress == gattAddress && $0.takesChannel }
        }
        guard let link = candidates.first(where: { $0.offerChannel(channel) }) else { return false }
        context.logger.debug("BLE: L2CAP channel from \(remoteAddress) offered to its GATT link")
        spawn { [weak self] in
            try? await Task.sleep(for: Self.offeredChannelDeadline)
            guard let unclaimed = link.withdrawUnclaimedChannel() else { return }
            guard let self, self.isRunning else {
                await unclaimed.close()
                return
            }
            context.logger.debug(
                "BLE: the GATT link from \(remoteAddress) did not move; its channel is a link of its own"
            )
            context.report(.inboundLink(unclaimed))
        }
        return true
    }

    /// After a GATT dial: when the data path allows it and the remote's identity names a
    /// PSM, opens an L2CAP channel there and moves the link's sending to it (the
    /// remote's follows). With `gatt_first` after ``Configuration/moveToL2CAPAfterSeconds``;
    /// with `auto` (the channel on the advertised PSM failed) only when the identity
    /// names another PSM. A failure leaves the link on GATT with one log line.
    func scheduleMove(_ link: GATTLink, local: BLEPeerAddress, remote: BLEPeerAddress, identityHandle: UInt16?) {
        guard configuration.dataPath.movesToL2CAP, let identityHandle else { return }
        let delay =
            configuration.dataPath == .gattFirst
            ? Duration.milliseconds(Int(configuration.moveToL2CAPAfterSeconds * 1000)) : .zero
        spawn { [weak self] in
            if delay > .zero {
                do { try await Task.sleep(for: delay) } catch { return }
            }
            await self?.moveToL2CAP(link, local: local, remote: remote, identityHandle: identityHandle)
        }
    }

    private func moveToL2CAP(
        _ link: GATTLink,
        local: BLEPeerAddress,
        remote: BLEPeerAddress,
        identityHandle: UInt16
    ) async {
        let logger = state.withLock { $0.logger }
        guard isRunning, link.takesChannel else { return }
        let identity: GATTIdentity
        do {
            identity = try GATTIdentity(decoding: try await link.connection.read(handle: identityHandle))
        } catch {
            logger?.info(
                "BLE: GATT link to \(remote.deviceAddress) stays on GATT: its identity could not be read (\(error))"
            )
            return
        }
        guard identity.listeningPSM != 0 else {
            logger?.debug(
                "BLE: GATT link to \(remote.deviceAddress) stays on GATT: the remote accepts no L2CAP channel"
            )
            return
        }
        guard configuration.dataPath == .gattFirst || identity.listeningPSM != remote.psm else { return }
        let target: BLEPeerAddress
        do {
            target = try BLEPeerAddress(bytes: remote.bytes, type: remote.type, psm: identity.listeningPSM)
        } catch {
            logger?.info("BLE: GATT link to \(remote.deviceAddress) stays on GATT: \(error)")
            return
        }
        let channel: SeqPacketLink
        do {
            channel = try await connect(local: local, remote: target)
        } catch {
            logger?.info(
                "BLE: GATT link to \(remote.deviceAddress) stays on GATT: \((error as? MeshError)?.message ?? "\(error)")"
            )
            return
        }
        do {
            try await link.moveSending(to: channel)
            logger?.info(
                "BLE: GATT link to \(remote.deviceAddress) moving to L2CAP PSM \(identity.listeningPSM) (MTU \(link.mtu))"
            )
        } catch {
            await channel.close()
            logger?.info(
                "BLE: GATT link to \(remote.deviceAddress) stays on GATT: \((error as? MeshError)?.message ?? "\(error)")"
            )
        }
    }
}
#endif
