import Logging
import MeshCore
import Synchronization

#if canImport(CBlueZ)
import CBlueZ
#endif

// A power profile's pacing: the scan duty cycle, advertising interval and transmit
// power, in place of the configured ones while it lasts.
extension BLETransport {
    /// The scan and advertising values in force: the pacing's where it sets one, else
    /// the configuration's (the window never longer than the interval).
    var pacedValues: (scanIntervalMs: Int, scanWindowMs: Int, advertisingIntervalMs: Int, txPower: Int?) {
        let pacing = state.withLock { $0.pacing }
        let scanInterval = pacing.scanInterval.map(\.wholeMilliseconds) ?? configuration.scanIntervalMs
        let scanWindow = pacing.scanWindow.map(\.wholeMilliseconds) ?? configuration.scanWindowMs
        return (
            scanInterval,
            min(scanWindow, scanInterval),
            pacing.advertisingInterval.map(\.wholeMilliseconds) ?? configuration.advertisingIntervalMs,
            pacing.transmitPowerDBm ?? configuration.txPower
        )
    }

    /// Takes a power profile's pacing: kept for the next start, and while the
    /// transport runs, the kernel gets the new scan duty cycle (discovery restarted
    /// with it) and the advertisement is added again with the new interval and power.
    public func apply(_ pacing: TransportPacing) async {
        state.withLock { $0.pacing = pacing }
        #if canImport(CBlueZ)
        let running = state.withLock { state in
            state.mgmt.flatMap { mgmt in state.schedule.map { (mgmt, $0, state.logger) } }
        }
        guard let (mgmt, schedule, logger) = running, isRunning else { return }
        let log = logger ?? Logger(label: "scmesh.ble")
        let paced = pacedValues
        let power = paced.txPower.map { " at \($0) dBm" } ?? ""
        log.info(
            "BLE: pacing scan \(paced.scanIntervalMs)/\(paced.scanWindowMs) ms, advertising every \(paced.advertisingIntervalMs) ms\(power)"
        )
        await setScanParameters(mgmt: mgmt, logger: log)
        _ = try? await mgmt.command(
            MgmtSocket.Opcode.stopDiscovery,
            index: configuration.adapterIndex,
            [MgmtSocket.leDiscoveryType]
        )
        await startDiscovery(mgmt: mgmt, logger: log)
        do {
            try await advertise(
                mgmt: mgmt,
                beacon: schedule.beacon(psm: UInt16(configuration.psm), at: Posix.unixTime())
            )
        } catch {
            log.warning("BLE: could not advertise with the new pacing: \(error)")
        }
        #endif
    }

    #if canImport(CBlueZ)
    /// Sets the kernel's scan duty cycle for discovery (best effort: older kernels lack
    /// the call, and keep their defaults).
    func setScanParameters(mgmt: MgmtSocket, logger: Logger) async {
        let paced = pacedValues
        var systemConfig: [UInt8] = []
        for (type, milliseconds) in [(UInt16(0x0011), paced.scanIntervalMs), (UInt16(0x0012), paced.scanWindowMs)] {
            systemConfig.appendLE16(type)
            systemConfig.append(2)
            systemConfig.appendLE16(UInt16(clamping: milliseconds * 1000 / 625))
        }
        if let reply = try? await mgmt.command(
            MgmtSocket.Opcode.setDefaultSystemConfig,
            index: configuration.adapterIndex,
            systemConfig
        ), reply.status != 0 {
            logger.warning(
                "BLE: the kernel refused the scan interval/window (\(MgmtSocket.statusName(reply.status))); using its defaults"
            )
        }
    }
    #endif
}
