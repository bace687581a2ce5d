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
    public let name = "ble"
    /// The settings this transport runs with.
    public let configuration: Configuration
    public let events: AsyncStream<TransportEvent>

    /// Nominal LE throughput in bits per second (1M PHY after protocol overhead).
    public static let nominalBitrate = 200_000
    /// The advertising instance this transport owns on its adapter.
    static let advertisingInstance: UInt8 = 1

    private let eventSink: AsyncStream<TransportEvent>.Continuation
    private let beaconHash: BLEBeaconSchedule.Hash?
    private let state = Mutex(State())

    private enum Phase {
        case idle, starting, running, stopped
    }

    private struct State {
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

    public func start(context: TransportContext) async throws {
        #if canImport(CBlueZ)
        try configuration.validate()
        let proceed = state.withLock { state -> Bool in
            guard state.phase == .idle else { return false }
            state.phase = .starting
            return true
        }
        guard proceed else {
            throw MeshError(.invalidArgument, "BLETransport.start was called twice or after stop")
        }
        do {
            try await startRunning(context: context)
        } catch {
            await stop()
            throw error
        }
        #else
        throw MeshError(.transportUnavailable, "BLE unavailable: SCMesh was built without the BLE trait (needs libbluetooth-dev)")
        #endif
    }

    public func dial(_ hint: PeerHint) async throws -> any Link {
        #if canImport(CBlueZ)
        guard hint.transport == name else {
            throw MeshError(.invalidArgument, "the ble transport cannot dial a \(hint.transport) hint (\(hint))")
        }
        let remote = try BLEPeerAddress(parsing: hint.address)
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
        }
        #endif
        eventSink.finish()
    }

    #if canImport(CBlueZ)
    // MARK: - Start-up

    private func startRunning(context: TransportContext) async throws {
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

    // MARK: - Advertising and discovery

    private func advertise(mgmt: MgmtSocket, beacon: BLEBeacon) async throws {
        let index = configuration.adapterIndex
        let instance = Self.advertisingInstance
        let advertising = BLEMeshAdvertisement.advertisingData()
        let scanResponse = BLEMeshAdvertisement.scanResponse(beacon: beacon)
        var flags = MgmtSocket.AdvertisingFlag.connectable | MgmtSocket.AdvertisingFlag.discoverable | MgmtSocket.AdvertisingFlag.intervals
        if configuration.txPower != nil { flags |= MgmtSocket.AdvertisingFlag.txPower }
        let interval = UInt32(configuration.advertisingIntervalMs * 1000 / 625)

        _ = try? await mgmt.command(MgmtSocket.Opcode.removeAdvertising, index: index, [instance])
        var parameters: [UInt8] = [instance]
        parameters.appendLE32(flags)
        parameters.appendLE16(0)  // duration: default
        parameters.appendLE16(0)  // timeout: none
        parameters.appendLE32(interval)
        parameters.appendLE32(interval)
        parameters.append(UInt8(bitPattern: Int8(clamping: configuration.txPower ?? 127)))  // 127: no preference
        let reply = try await mgmt.command(MgmtSocket.Opcode.addExtAdvParams, index: index, parameters)
        if reply.status == 0 {
            let data = [instance, UInt8(advertising.count), UInt8(scanResponse.count)] + advertising + scanResponse
            let dataReply = try await mgmt.command(MgmtSocket.Opcode.addExtAdvData, index: index, data)
            guard dataReply.status == 0 else {
                throw MeshError(.transportUnavailable, "BLE unavailable: \(configuration.adapter) refused the advertising data (\(MgmtSocket.statusName(dataReply.status)))")
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
            throw MeshError(.transportUnavailable, "BLE unavailable: \(configuration.adapter) refused to advertise (\(MgmtSocket.statusName(legacyReply.status)))")
        }
    }

    private func startDiscovery(mgmt: MgmtSocket, logger: Logger) async {
        do {
            let reply = try await mgmt.command(MgmtSocket.Opcode.startDiscovery, index: configuration.adapterIndex, [MgmtSocket.leDiscoveryType])
            if reply.status != 0 && reply.status != 0x0A {
                logger.warning("BLE: LE discovery on \(configuration.adapter) failed to start: \(MgmtSocket.statusName(reply.status))")
            }
        } catch {
            logger.warning("BLE: LE discovery on \(configuration.adapter) failed to start: \(error)")
        }
    }

    private func eventLoop(mgmt: MgmtSocket, logger: Logger) async {
        let index = configuration.adapterIndex
        for await event in mgmt.events where event.index == index {
            switch event.code {
            case MgmtSocket.EventCode.deviceFound:
                guard let hint = discoveredHint(event.parameters) else { continue }
                if state.withLock({ $0.sightings.sighted(hint, at: .now) }) {
                    logger.debug("BLE: discovered \(hint)")
                    eventSink.yield(.peerDiscovered(hint))
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
    private func discoveredHint(_ parameters: [UInt8]) -> PeerHint? {
        // bdaddr (6, LE) | type (1) | rssi (1) | flags (4) | eir length (2) | eir
        guard parameters.count >= 14 else { return nil }
        let length = Int(parameters.le16(at: 12))
        guard parameters.count >= 14 + length else { return nil }
        guard let sighting = BLEMeshAdvertisement.parse(Array(parameters[14..<(14 + length)])),
            let beacon = sighting.beacon
        else { return nil }
        let type: BLEPeerAddress.AddressType = parameters[6] == 2 ? .random : .public
        guard let address = try? BLEPeerAddress(bytes: Array(parameters[0..<6].reversed()), type: type, psm: beacon.psm) else {
            return nil
        }
        let (known, schedule) = state.withLock { ($0.knownPeers, $0.schedule) }
        let peer = schedule?.recognise(beacon.ephemeralID, among: known, at: Posix.unixTime())
        return PeerHint(
            transport: name, address: address.description, peerID: peer,
            metadata: [
                "rssi": String(Int8(bitPattern: parameters[7])),
                "ephemeral_id": Hex.encode(beacon.ephemeralID),
                "adapter": configuration.adapter,
            ])
    }

    /// Reports advertisers not seen for a while as lost (kernel discovery sees a present
    /// node again every ~10 s cycle).
    private func lostLoop(logger: Logger) async {
        while isRunning {
            do { try await Task.sleep(for: .seconds(5)) } catch { return }
            for hint in state.withLock({ $0.sightings.lost(at: .now) }) {
                logger.debug("BLE: lost \(hint)")
                eventSink.yield(.peerLost(hint))
            }
        }
    }

    private func rotationLoop(mgmt: MgmtSocket, schedule: BLEBeaconSchedule, logger: Logger) async {
        let psm = UInt16(configuration.psm)
        while isRunning {
            let wait = schedule.secondsUntilRotation(at: Posix.unixTime())
            do { try await Task.sleep(for: .seconds(Int(wait))) } catch { return }
            guard isRunning else { return }
            do {
                try await advertise(mgmt: mgmt, beacon: schedule.beacon(psm: psm, at: Posix.unixTime()))
                logger.debug("BLE: rotated the beacon")
            } catch {
                logger.warning("BLE: could not rotate the beacon: \(error)")
            }
        }
    }

    // MARK: - Links

    private func acceptLoop(listenFD: Int32, logger: Logger) async {
        defer { _ = Glibc.close(listenFD) }
        while isRunningOrStarting {
            do {
                guard let (fd, peer) = try L2CAP.accept(listenFD) else {
                    try await FDReactor.shared.wait(listenFD, for: .readable)
                    continue
                }
                let type: BLEPeerAddress.AddressType = peer.l2_bdaddr_type == 2 ? .random : .public
                let remote = L2CAP.addressBytes(peer)
                let text = (try? BLEPeerAddress(bytes: remote, type: type, psm: 0)).map { "\($0.deviceAddress)/\($0.type)" } ?? "unknown"
                do {
                    let link = try makeLink(fd: fd, remoteAddress: text)
                    eventSink.yield(.inboundLink(link))
                } catch {
                    _ = Glibc.close(fd)
                    logger.warning("BLE: dropped an inbound channel from \(text): \(error)")
                }
            } catch is CancellationError {
                return
            } catch {
                guard isRunningOrStarting else { return }
                logger.warning("BLE: accept failed: \(error)")
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    private func connect(local: BLEPeerAddress, remote: BLEPeerAddress) async throws -> SeqPacketLink {
        let fd: Int32
        do {
            fd = try L2CAP.socket(
                local: local.bytes, type: local.type, psm: 0, security: configuration.securityLevel, receiveMTU: Self.defaultMTU)
        } catch {
            throw MeshError(.dialFailed, "BLE dial to \(remote) failed: \(error)", cause: error)
        }
        do {
            if try !L2CAP.startConnect(fd, to: remote) {
                try await waitConnected(fd)
            }
            return try makeLink(fd: fd, remoteAddress: remote.description)
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
    private func beginDial() async {
        let (first, mgmt) = state.withLock { state -> (Bool, MgmtSocket?) in
            state.dialsInFlight += 1
            return (state.dialsInFlight == 1, state.mgmt)
        }
        if first, let mgmt {
            _ = try? await mgmt.command(MgmtSocket.Opcode.stopDiscovery, index: configuration.adapterIndex, [MgmtSocket.leDiscoveryType])
        }
    }

    /// Resumes discovery after the last dial in flight.
    private func endDial() async {
        let (last, mgmt) = state.withLock { state -> (Bool, MgmtSocket?) in
            state.dialsInFlight -= 1
            return (state.dialsInFlight == 0 && state.phase == .running, state.mgmt)
        }
        if last, let mgmt, let logger = state.withLock({ $0.logger }) {
            await startDiscovery(mgmt: mgmt, logger: logger)
        }
    }

    private func waitConnected(_ fd: Int32) async throws {
        while true {
            try await FDReactor.shared.wait(fd, for: .writable)
            let pending = Posix.socketError(fd)
            if pending != 0 { throw SystemError("connect(L2CAP LE)", errno: pending) }
            var probe = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&probe, 1, 0) == 1, probe.revents & Int16(POLLOUT) != 0 { return }
        }
    }

    private func makeLink(fd: Int32, remoteAddress: String) throws -> SeqPacketLink {
        let (send, receive) = try L2CAP.mtus(fd)
        let link = try SeqPacketLink(
            adopting: fd, transportName: name, remoteAddress: remoteAddress, mtu: send, receiveMTU: max(receive, 1),
            onClose: { [weak self] id in self?.forget(id) },
            unsentBytes: { Int(cbluez_unsent_bytes($0)) })
        let accepted = state.withLock { state -> Bool in
            guard state.phase == .running || state.phase == .starting else { return false }
            state.links[link.id] = link
            return true
        }
        if !accepted {
            Task { await link.close() }
            throw MeshError(.notRunning, "the ble transport stopped")
        }
        return link
    }

    private func forget(_ id: LinkID) {
        state.withLock { _ = $0.links.removeValue(forKey: id) }
    }

    private var isRunning: Bool { state.withLock { $0.phase == .running } }
    private var isRunningOrStarting: Bool { state.withLock { $0.phase == .running || $0.phase == .starting } }

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
