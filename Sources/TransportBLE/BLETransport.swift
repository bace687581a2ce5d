#if canImport(CBlueZ)
import CBlueZ
#endif
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MeshCore
import Synchronization

/// The Bluetooth Low Energy transport on Linux: BlueZ's kernel stack, driven directly
/// (mgmt and L2CAP sockets; no `bluetoothd`).
///
/// - **Advertising**: connectable LE advertising with the mesh service UUID
///   ``BLEMeshAdvertisement/serviceUUIDString`` and, in the scan response, a
///   ``BLEBeacon`` whose ephemeral identifier rotates every
///   ``Configuration/beaconRotationSeconds`` (see ``BLEBeaconSchedule``).
/// - **Scanning**: kernel LE discovery with the configured interval/window; each node
///   advertising the service is reported as `.peerDiscovered` with the hint address
///   `"<bdaddr>/<public|random>/<psm>"`, at most once per ``Configuration/dedupWindowSeconds``
///   per beacon.
/// - **Links**: L2CAP LE credit-based channels (`SOCK_SEQPACKET`) on
///   ``Configuration/psm``; one frame per packet, MTU from `BT_SNDMTU`, one write in
///   flight, back-pressure from the channel's credits.
///
/// When the kernel has no Bluetooth, or the adapter is missing, down or without LE,
/// ``start(context:)`` throws `.transportUnavailable` with one line saying why.
///
/// ```swift
/// let ble = BLETransport(configuration: .init(), beaconHash: { MeshHash.sha256($0) })
/// try await ble.start(context: TransportContext(localPeerID: me, logger: logger))
/// ```
public final class BLETransport: Transport {
    /// `"ble"`.
    public let name = "ble"
    /// The settings this transport runs with.
    public let configuration: Configuration
    /// Discovered and lost nodes (`"ble"` hints) and inbound channels; finishes after ``stop()``.
    public let events: AsyncStream<TransportEvent>

    /// Nominal LE throughput in bits per second (1M PHY after protocol overhead).
    public static let nominalBitrate = 200_000
    /// The advertising instance this transport owns on its adapter.
    static let advertisingInstance: UInt8 = 1

    let eventSink: AsyncStream<TransportEvent>.Continuation
    let beaconHash: BLEBeaconSchedule.Hash?
    let state = Mutex(State())

    enum Phase {
        case idle, starting, running, stopped
    }

    struct State {
        var phase: Phase = .idle
        var local: BLEPeerAddress?
        var schedule: BLEBeaconSchedule?
        var links: [LinkID: SeqPacketLink] = [:]
        var knownPeers: Set<PeerID> = []
        var sightings = SightingTracker(window: .seconds(5), lostAfter: .seconds(30))
        var logger: Logger?
        var tasks: [Task<Void, Never>] = []
        var listenFD: Int32 = -1
        /// Dials in progress: discovery pauses while there are any.
        var dialsInFlight = 0
        #if canImport(CBlueZ)
        var mgmt: MgmtSocket?
        #endif
    }

    /// Creates a transport; nothing touches the radio before ``start(context:)``.
    /// - Parameters:
    ///   - configuration: the settings (validated in ``start(context:)``).
    ///   - beaconHash: the hash for the beacon's ephemeral identifier (see
    ///     ``BLEBeaconSchedule``); nil advertises random identifiers.
    public init(configuration: Configuration = Configuration(), beaconHash: BLEBeaconSchedule.Hash? = nil) {
        self.configuration = configuration
        self.beaconHash = beaconHash
        (events, eventSink) = AsyncStream.makeStream(of: TransportEvent.self, bufferingPolicy: .bufferingNewest(1024))
    }

    /// Small MTU, low bitrate, reliable (credit-based channels lose nothing), needs
    /// discovery, high power cost.
    public var capabilities: TransportCapabilities {
        TransportCapabilities(
            maxFrameSize: Self.defaultMTU, nominalBitrate: Self.nominalBitrate, isReliable: true,
            needsDiscovery: true, powerCost: 8)
    }

    /// The receive MTU the transport asks for on its channels (the kernel's LE default).
    public static let defaultMTU = 672

    /// This node's address once started: adapter address, type and PSM.
    public var localAddress: BLEPeerAddress? { state.withLock { $0.local } }

    /// Peers whose beacons the transport should recognise: a discovered hint then
    /// carries the peer's ID. Needs a `beaconHash`.
    public func setKnownPeers(_ peers: some Sequence<PeerID>) {
        let set = Set(peers)
        state.withLock { $0.knownPeers = set }
    }

    /// The links currently open.
    public var openLinkCount: Int { state.withLock { $0.links.count } }

    /// Checks the adapter, listens on the PSM, advertises and starts discovery.
    /// - Throws: `.invalidConfiguration` for a bad setting; `.transportUnavailable` with
    ///   one line when the kernel has no Bluetooth or the adapter is missing, down or
    ///   without LE.
    public func start(context: TransportContext) async throws {
        let proceed = state.withLock { state -> Bool in
            guard state.phase == .idle else { return false }
            state.phase = .starting
            return true
        }
        guard proceed else {
            throw MeshError(.invalidArgument, "BLETransport.start was called twice or after stop")
        }
        do {
            // A transport whose start failed is finished: stop() ends `events` too.
            try configuration.validate()
            #if canImport(CBlueZ)
            try await startRunning(context: context)
            #else
            throw MeshError(.transportUnavailable, "BLE unavailable: SCMesh was built without the BLE trait (needs libbluetooth-dev)")
            #endif
        } catch {
            await stop()
            throw error
        }
    }

    /// Opens an L2CAP LE channel to a `"ble"` hint (discovery pauses meanwhile: the kernel
    /// connects when its scan sees the peer's advertising again).
    /// - Throws: `.dialFailed` when nothing answers, `.invalidArgument` for a bad hint,
    ///   `.notRunning` before ``start(context:)``.
    public func dial(_ hint: PeerHint) async throws -> any Link {
        guard hint.transport == name else {
            throw MeshError(.invalidArgument, "the ble transport cannot dial a \(hint.transport) hint (\(hint))")
        }
        let remote = try BLEPeerAddress(parsing: hint.address)
        #if canImport(CBlueZ)
        guard let local = state.withLock({ $0.phase == .running ? $0.local : nil }) else {
            throw MeshError(.notRunning, "the ble transport is not running; start it before dialling \(hint.address)")
        }
        await beginDial()
        do {
            let link = try await connect(local: local, remote: remote)
            await endDial()
            return link
        } catch {
            await endDial()
            throw error
        }
        #else
        throw MeshError(.transportUnavailable, "BLE unavailable: SCMesh was built without the BLE trait (needs libbluetooth-dev)")
        #endif
    }

    /// Withdraws the advertising, stops discovery, closes the listener and every link, and finishes ``events``.
    public func stop() async {
        #if canImport(CBlueZ)
        let (wasActive, links, tasks, listenFD, mgmt) = state.withLock { state in
            let active = state.phase == .running || state.phase == .starting
            state.phase = .stopped
            defer {
                state.links = [:]
                state.tasks = []
                state.mgmt = nil
            }
            return (active, Array(state.links.values), state.tasks, state.listenFD, state.mgmt)
        }
        if wasActive {
            if listenFD >= 0 {
                _ = shutdown(listenFD, Posix.shutdownBoth)
                FDReactor.shared.wakeAll(fd: listenFD)
            }
            if let mgmt {
                let index = configuration.adapterIndex
                _ = try? await mgmt.command(MgmtSocket.Opcode.removeAdvertising, index: index, [Self.advertisingInstance])
                _ = try? await mgmt.command(MgmtSocket.Opcode.stopDiscovery, index: index, [MgmtSocket.leDiscoveryType])
                await mgmt.close()
            }
            for link in links { await link.close() }
            for task in tasks { task.cancel() }
            for task in tasks { await task.value }
            // The accept loop closes the listener; without one (start failed), close it here.
            if tasks.isEmpty && listenFD >= 0 { _ = Glibc.close(listenFD) }
        }
        #endif
        eventSink.finish()
    }

    #if canImport(CBlueZ)
    // MARK: - Start-up

    func startRunning(context: TransportContext) async throws {
        let logger = context.logger
        let index = configuration.adapterIndex
        let adapter = configuration.adapter

        let mgmt: MgmtSocket
        do {
            mgmt = try MgmtSocket()
        } catch {
            throw Self.unavailable(error)
        }
        mgmt.start()
        state.withLock { $0.mgmt = mgmt }

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
            let listed = present.isEmpty ? "no adapters present" : "adapters present: \(present.joined(separator: ", "))"
            throw MeshError(.transportUnavailable, "BLE unavailable: no Bluetooth adapter \(adapter) (\(listed))")
        }
        guard info.status == 0, info.parameters.count >= 17 else {
            throw MeshError(.transportUnavailable, "BLE unavailable: cannot read adapter \(adapter): \(MgmtSocket.statusName(info.status))")
        }
        let addressBytes = Array(info.parameters[0..<6].reversed())
        let supported = info.parameters.le32(at: 9)
        let current = info.parameters.le32(at: 13)
        guard supported & MgmtSocket.Setting.lowEnergy != 0 else {
            throw MeshError(.transportUnavailable, "BLE unavailable: adapter \(adapter) does not support Bluetooth Low Energy")
        }
        guard current & MgmtSocket.Setting.powered != 0 else {
            throw MeshError(.transportUnavailable, "BLE unavailable: adapter \(adapter) is down (power it on: btmgmt -i \(adapter) power on)")
        }
        guard current & MgmtSocket.Setting.lowEnergy != 0 else {
            throw MeshError(.transportUnavailable, "BLE unavailable: Low Energy is switched off on \(adapter) (btmgmt -i \(adapter) le on)")
        }
        guard addressBytes.contains(where: { $0 != 0 }) else {
            throw MeshError(
                .transportUnavailable,
                "BLE unavailable: adapter \(adapter) has no public address (controllers with only a static random address are not supported yet)")
        }
        let psm = UInt16(configuration.psm)
        let local = try BLEPeerAddress(bytes: addressBytes, type: .public, psm: psm)

        // The listening channel.
        let listenFD: Int32
        do {
            listenFD = try L2CAP.socket(
                local: local.bytes, type: local.type, psm: psm, security: configuration.securityLevel, receiveMTU: Self.defaultMTU)
        } catch {
            throw MeshError(
                .transportUnavailable, "BLE unavailable: cannot listen on PSM \(local.description.split(separator: "/").last!) of \(adapter): \(Self.explain(error))",
                cause: error)
        }
        do {
            try L2CAP.listen(listenFD)
        } catch {
            _ = Glibc.close(listenFD)
            throw MeshError(.transportUnavailable, "BLE unavailable: listen on \(adapter) failed: \(Self.explain(error))", cause: error)
        }
        let schedule = try BLEBeaconSchedule(
            localPeerID: context.localPeerID, rotationSeconds: configuration.beaconRotationSeconds, hash: beaconHash)
        state.withLock {
            $0.listenFD = listenFD
            $0.local = local
            $0.schedule = schedule
            $0.logger = logger
            $0.sightings = SightingTracker(
                window: .milliseconds(Int(configuration.dedupWindowSeconds * 1000)),
                lostAfter: .seconds(max(30, Int(configuration.dedupWindowSeconds * 3))))
        }

        // Scan duty cycle for kernel discovery (best effort: older kernels lack the call).
        var systemConfig: [UInt8] = []
        for (type, milliseconds) in [(UInt16(0x0011), configuration.scanIntervalMs), (UInt16(0x0012), configuration.scanWindowMs)] {
            systemConfig.appendLE16(type)
            systemConfig.append(2)
            systemConfig.appendLE16(UInt16(clamping: milliseconds * 1000 / 625))
        }
        if let reply = try? await mgmt.command(MgmtSocket.Opcode.setDefaultSystemConfig, index: index, systemConfig), reply.status != 0 {
            logger.warning("BLE: the kernel refused the scan interval/window (\(MgmtSocket.statusName(reply.status))); using its defaults")
        }

        try await advertise(mgmt: mgmt, beacon: schedule.beacon(psm: psm, at: Posix.unixTime()))
        await startDiscovery(mgmt: mgmt, logger: logger)

        let accept = Task { [weak self] () async -> Void in await self?.acceptLoop(listenFD: listenFD, logger: logger) }
        let discovery = Task { [weak self] () async -> Void in await self?.eventLoop(mgmt: mgmt, logger: logger) }
        let rotation = Task { [weak self] () async -> Void in await self?.rotationLoop(mgmt: mgmt, schedule: schedule, logger: logger) }
        let lost = Task { [weak self] () async -> Void in await self?.lostLoop(logger: logger) }
        let stillStarting = state.withLock { state -> Bool in
            state.tasks = [accept, discovery, rotation, lost]
            guard state.phase == .starting else { return false }
            state.phase = .running
            return true
        }
        if !stillStarting {
            throw MeshError(.notRunning, "the ble transport was stopped while starting")
        }
        logger.info("BLE: listening on \(local) (\(adapter)); advertising \(BLEMeshAdvertisement.serviceUUIDString)")
    }

    // MARK: - Errors

    /// One line for a failed Bluetooth system call.
    static func explain(_ error: any Error) -> String {
        guard let error = error as? SystemError else { return "\(error)" }
        switch error.errno {
        case EADDRINUSE: return "\(error.call): \(error.errnoName) (another process uses it; choose another transports.ble.psm)"
        case ECONNREFUSED: return "\(error.call): \(error.errnoName) (nothing listens on that PSM)"
        case ETIMEDOUT, EHOSTDOWN, EHOSTUNREACH: return "\(error.call): \(error.errnoName) (the device is out of range or not advertising)"
        case EACCES, EPERM: return "\(error.call): \(error.errnoName) (needs root or CAP_NET_ADMIN/CAP_NET_RAW)"
        default: return error.description
        }
    }

    /// The unavailable error for a failed mgmt socket.
    static func unavailable(_ error: SystemError) -> MeshError {
        switch error.errno {
        case EAFNOSUPPORT, EPROTONOSUPPORT:
            return MeshError(
                .transportUnavailable,
                "BLE unavailable: this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: \(error.errnoName))", cause: error)
        case EACCES, EPERM:
            return MeshError(
                .transportUnavailable,
                "BLE unavailable: not allowed to open the Bluetooth management socket (\(error.errnoName)); run as root or grant CAP_NET_ADMIN",
                cause: error)
        default:
            return MeshError(.transportUnavailable, "BLE unavailable: \(error)", cause: error)
        }
    }
    #endif
}
