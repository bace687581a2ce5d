import Logging
import MeshCore
import Synchronization

#if canImport(CBlueZ)
import CBlueZ
#if canImport(Glibc)
import Glibc
#endif

// Start-up: the adapter checked, the listening channel opened, advertising and
// discovery started.
extension BLETransport {
    /// Checks the adapter, opens the listening channel, advertises and starts discovery.
    func prepare(mgmt: MgmtSocket, context: TransportContext) async throws -> Started {
        let logger = context.logger
        let index = configuration.adapterIndex
        let adapter = configuration.adapter

        // The adapter: present, LE-capable, LE on, powered.
        let info = try await mgmt.command(MgmtSocket.Opcode.readInfo, index: index)
        if info.status == 0x11 {
            let list = try? await mgmt.command(MgmtSocket.Opcode.readIndexList, index: 0xFFFF)
            var present: [String] = []
            if let list, list.status == 0, list.parameters.count >= 2 {
                let count = Int(list.parameters.le16(at: 0))
                for entry in 0..<count where 2 + 2 * entry + 1 < list.parameters.count {
                    present.append("hci\(list.parameters.le16(at: 2 + 2 * entry))")
                }
            }
            let listed =
                present.isEmpty ? "no adapters present" : "adapters present: \(present.joined(separator: ", "))"
            throw MeshError(.transportUnavailable, "BLE unavailable: no Bluetooth adapter \(adapter) (\(listed))")
        }
        guard info.status == 0, info.parameters.count >= 17 else {
            throw MeshError(
                .transportUnavailable,
                "BLE unavailable: cannot read adapter \(adapter): \(MgmtSocket.statusName(info.status))"
            )
        }
        let addressBytes = Array(info.parameters[0..<6].reversed())
        let supported = info.parameters.le32(at: 9)
        let current = info.parameters.le32(at: 13)
        guard supported & MgmtSocket.Setting.lowEnergy != 0 else {
            throw MeshError(
                .transportUnavailable,
                "BLE unavailable: adapter \(adapter) does not support Bluetooth Low Energy"
            )
        }
        guard current & MgmtSocket.Setting.powered != 0 else {
            throw MeshError(
                .transportUnavailable,
                "BLE unavailable: adapter \(adapter) is down (power it on: btmgmt -i \(adapter) power on)"
            )
        }
        guard current & MgmtSocket.Setting.lowEnergy != 0 else {
            throw MeshError(
                .transportUnavailable,
                "BLE unavailable: Low Energy is switched off on \(adapter) (btmgmt -i \(adapter) le on)"
            )
        }
        guard addressBytes.contains(where: { $0 != 0 }) else {
            throw MeshError(
                .transportUnavailable,
                "BLE unavailable: adapter \(adapter) has no public address (controllers with only a static random address are not supported yet)"
            )
        }
        let psm = UInt16(configuration.psm)
        let local = try BLEPeerAddress(bytes: addressBytes, type: .public, psm: psm)

        // The listening channel (none when GATT is the only path).
        let listenFD: Int32?
        if configuration.dataPath == .gatt {
            listenFD = nil
        } else {
            do {
                listenFD = try L2CAP.socket(
                    local: local.bytes,
                    type: local.type,
                    psm: psm,
                    security: configuration.securityLevel,
                    receiveMTU: Self.defaultMTU
                )
            } catch {
                throw MeshError(
                    .transportUnavailable,
                    "BLE unavailable: cannot listen on PSM \(local.description.split(separator: "/").last!) of \(adapter): \(Self.explain(error))",
                    cause: error
                )
            }
        }
        if let listenFD {
            do {
                try L2CAP.listen(listenFD)
            } catch {
                _ = Glibc.close(listenFD)
                throw MeshError(
                    .transportUnavailable,
                    "BLE unavailable: listen on \(adapter) failed: \(Self.explain(error))",
                    cause: error
                )
            }
        }
        var attFD: Int32?
        do {
            if configuration.gatt { attFD = try openATTListener(local: local, logger: logger) }
            let schedule = try BLEBeaconSchedule(
                localPeerID: context.localPeerID,
                rotationSeconds: configuration.beaconRotationSeconds,
                hash: beaconHash
            )
            state.withLock {
                $0.local = local
                $0.schedule = schedule
                $0.listeningPSM = listenFD == nil ? 0 : psm
                $0.sightings = SightingTracker(
                    window: .milliseconds(Int(configuration.dedupWindowSeconds * 1000)),
                    lostAfter: .seconds(max(30, Int(configuration.dedupWindowSeconds * 3)))
                )
            }

            await setScanParameters(mgmt: mgmt, logger: logger)
            try await advertise(mgmt: mgmt, beacon: schedule.beacon(psm: psm, at: Posix.unixTime()))
            await startDiscovery(mgmt: mgmt, logger: logger)
            return Started(local: local, listenFD: listenFD, attFD: attFD, schedule: schedule)
        } catch {
            if let listenFD { _ = Glibc.close(listenFD) }
            if let attFD { _ = Glibc.close(attFD) }
            throw error
        }
    }
}
#endif
