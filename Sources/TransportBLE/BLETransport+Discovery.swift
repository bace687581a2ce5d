#if canImport(CBlueZ)
import CBlueZ
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MeshCore
import Synchronization

extension BLETransport {
    func advertise(mgmt: MgmtSocket, beacon: BLEBeacon) async throws {
        let index = configuration.adapterIndex
        let instance = Self.advertisingInstance
        let advertising = BLEMeshAdvertisement.advertisingData()
        let scanResponse = BLEMeshAdvertisement.scanResponse(beacon: beacon)
        var flags =
            MgmtSocket.AdvertisingFlag.connectable | MgmtSocket.AdvertisingFlag.discoverable
            | MgmtSocket.AdvertisingFlag.intervals
        let paced = pacedValues
        if paced.txPower != nil { flags |= MgmtSocket.AdvertisingFlag.txPower }
        let interval = UInt32(paced.advertisingIntervalMs * 1000 / 625)

        _ = try? await mgmt.command(MgmtSocket.Opcode.removeAdvertising, index: index, [instance])
        var parameters: [UInt8] = [instance]
        parameters.appendLE32(flags)
        parameters.appendLE16(0)  // duration: default
        parameters.appendLE16(0)  // timeout: none
        parameters.appendLE32(interval)
        parameters.appendLE32(interval)
        parameters.append(UInt8(bitPattern: Int8(clamping: paced.txPower ?? 127)))  // 127: no preference
        let reply = try await mgmt.command(MgmtSocket.Opcode.addExtAdvParams, index: index, parameters)
        if reply.status == 0 {
            let data = [instance, UInt8(advertising.count), UInt8(scanResponse.count)] + advertising + scanResponse
            let dataReply = try await mgmt.command(MgmtSocket.Opcode.addExtAdvData, index: index, data)
            guard dataReply.status == 0 else {
                throw MeshError(
                    .transportUnavailable,
                    "BLE unavailable: \(configuration.adapter) refused the advertising data (\(MgmtSocket.statusName(dataReply.status)))"
                )
            }
            return
        }
        // Kernels before 5.13 lack the extended call: plain Add Advertising (no interval/TX power).
        var legacy: [UInt8] = [instance]
        legacy.appendLE32(MgmtSocket.AdvertisingFlag.connectable | MgmtSocket.AdvertisingFlag.discoverable)
        legacy.appendLE16(0)
        legacy.appendLE16(0)
        legacy += [UInt8(advertising.count), UInt8(scanResponse.count)] + advertising + scanResponse
        let legacyReply = try await mgmt.command(MgmtSocket.Opcode.addAdvertising, index: index, legacy)
        guard legacyReply.status == 0 else {
            throw MeshError(
                .transportUnavailable,
                "BLE unavailable: \(configuration.adapter) refused to advertise (\(MgmtSocket.statusName(legacyReply.status)))"
            )
        }
    }

    func startDiscovery(mgmt: MgmtSocket, logger: Logger) async {
        do {
            let reply = try await mgmt.command(
                MgmtSocket.Opcode.startDiscovery,
                index: configuration.adapterIndex,
                [MgmtSocket.leDiscoveryType]
            )
            if reply.status != 0 && reply.status != 0x0A {
                logger.warning(
                    "BLE: LE discovery on \(configuration.adapter) failed to start: \(MgmtSocket.statusName(reply.status))"
                )
            }
        } catch {
            logger.warning("BLE: LE discovery on \(configuration.adapter) failed to start: \(error)")
        }
    }

    /// Reports discovered nodes and keeps kernel discovery going, until the mgmt socket
    /// closes or the task is cancelled.
    func eventLoop(mgmt: MgmtSocket, context: TransportContext) async {
        let logger = context.logger
        let index = configuration.adapterIndex
        for await event in mgmt.events where event.index == index {
            switch event.code {
            case MgmtSocket.EventCode.deviceFound:
                guard let hint = discoveredHint(event.parameters) else { continue }
                if state.withLock({ $0.sightings.sighted(hint, at: .now) }) {
                    logger.debug("BLE: discovered \(hint)")
                    context.report(.peerDiscovered(hint))
                }
            case MgmtSocket.EventCode.discovering:
                // Kernel discovery runs ~10 s; keep it going while the transport runs.
                let dialling = state.withLock { $0.dialsInFlight > 0 }
                guard event.parameters.count >= 2, event.parameters[1] == 0, isRunning, !dialling else { continue }
                await startDiscovery(mgmt: mgmt, logger: logger)
            case MgmtSocket.EventCode.indexRemoved:
                logger.warning("BLE: adapter \(configuration.adapter) was removed")
            default:
                continue
            }
        }
    }

    /// The hint for a Device Found event, or nil when it is not an SCMesh node.
    func discoveredHint(_ parameters: [UInt8]) -> PeerHint? {
        guard let found = MgmtDeviceFound(parameters: parameters),
            let sighting = BLEMeshAdvertisement.parse(found.eir),
            let beacon = sighting.beacon,
            let address = try? BLEPeerAddress(bytes: found.address, type: found.type, psm: beacon.psm)
        else { return nil }
        let (known, schedule) = state.withLock { ($0.knownPeers, $0.schedule) }
        let peer = schedule?.recognise(beacon.ephemeralID, among: known, at: Posix.unixTime())
        return PeerHint(
            transport: name,
            address: address.description,
            peerID: peer,
            metadata: [
                "rssi": String(found.rssi),
                "ephemeral_id": Hex.encode(beacon.ephemeralID),
                "adapter": configuration.adapter,
            ]
        )
    }

    /// Reports advertisers not seen for a while as lost (kernel discovery sees a present
    /// node again every ~10 s cycle).
    func lostLoop(context: TransportContext) async {
        let logger = context.logger
        while isRunning {
            do { try await Task.sleep(for: .seconds(5)) } catch { return }
            for hint in state.withLock({ $0.sightings.lost(at: .now) }) {
                logger.debug("BLE: lost \(hint)")
                context.report(.peerLost(hint))
            }
        }
    }

    func rotationLoop(mgmt: MgmtSocket, schedule: BLEBeaconSchedule, logger: Logger) async {
        let psm = UInt16(configuration.psm)
        while isRunning {
            let wait = schedule.secondsUntilRotation(at: Posix.unixTime())
            do { try await Task.sleep(for: .seconds(Int(wait))) } catch { return }
            guard isRunning else { return }
            do {
                try await advertise(mgmt: mgmt, beacon: schedule.beacon(psm: psm, at: Posix.unixTime()))
                logger.debug("BLE: rotated the beacon")
                let identity = currentIdentity()
                for connection in state.withLock({ Array($0.gattConnections.values) }) {
                    connection.setIdentity(identity)
                }
            } catch {
                logger.warning("BLE: could not rotate the beacon: \(error)")
            }
        }
    }
}
#endif
