import Logging
import MeshCore
import Synchronization

#if canImport(CBlueZ)
import CBlueZ
#endif
#if canImport(Glibc)
import Glibc
#endif

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
/// - **GATT** (``Configuration/gatt``, on by default): the seed app's profile
///   (``GATTProfile``) served on the kernel's ATT fixed channel (L2CAP CID 4) to any
///   central, and dialled when the remote accepts no L2CAP channel or
///   ``Configuration/dataPath`` says so: a ``GATTLink`` (MTU = ATT MTU − 3). L2CAP is
///   preferred: `auto` dials a channel first and falls back to GATT; `gatt_first` dials
///   GATT and moves the link to a channel when the remote's identity names a PSM
///   (docs/PROTOCOL.md §C.1; the core sees one link throughout).
///
/// Its whole life is one call of ``listen(context:)``: the accept loop, the mgmt event
/// loop, the beacon rotation and the lost-peer sweep are child tasks of it, and
/// cancelling the calling task withdraws the advertising, stops discovery and closes
/// the listener and every link before it returns. When the kernel has no Bluetooth, or
/// the adapter is missing, down or without LE, ``listen(context:)`` throws
/// `.transportUnavailable` with one line saying why.
///
/// ```swift
/// let ble = BLETransport(configuration: .init(), beaconHash: { MeshHash.sha256($0) })
/// try await ble.listen(context: context)  // until the task is cancelled
/// ```
public final class BLETransport: Transport, TransportCounting {
    /// `"ble"`.
    public let name = "ble"
    /// The settings this transport runs with.
    public let configuration: Configuration

    /// Nominal LE throughput in bits per second (1M PHY after protocol overhead).
    public static let nominalBitrate = 200_000
    /// The advertising instance this transport owns on its adapter.
    static let advertisingInstance: UInt8 = 1

    let beaconHash: BLEBeaconSchedule.Hash?
    let state = Mutex(State())
    /// The accept loop's limiter of remote-caused log lines (its totals are ``counters``).
    let failureLog = Mutex<LogLimiter?>(nil)

    enum Phase {
        case idle, starting, running, stopped
    }

    struct State {
        var phase: Phase = .idle
        var local: BLEPeerAddress?
        var schedule: BLEBeaconSchedule?
        var links: [LinkID: SeqPacketLink] = [:]
        /// ATT bearers with a GATT server on them (accepted or dialled).
        var gattConnections: [ObjectIdentifier: GATTConnection] = [:]
        /// Open GATT links whose remote subscribed to our RX: an L2CAP channel accepted
        /// from the same device may be their move (see ``GATTLink``).
        var peripheralGATTLinks: [ObjectIdentifier: GATTLink] = [:]
        /// Work that outlives the call that started it (a link's move, an offered
        /// channel's deadline), run as child tasks of ``listen(context:)``.
        var jobs: AsyncStream<@Sendable () async -> Void>.Continuation?
        /// The PSM the L2CAP listener accepts channels on; 0 without one.
        var listeningPSM: UInt16 = 0
        var knownPeers: Set<PeerID> = []
        var sightings = SightingTracker(window: .seconds(5), lostAfter: .seconds(30))
        var logger: Logger?
        /// The context of the running ``listen(context:)`` (a dialled ATT bearer's
        /// peripheral link is reported there).
        var context: TransportContext?
        /// Dials in progress: discovery pauses while there are any.
        var dialsInFlight = 0
        /// The power profile's pacing (``apply(_:)``).
        var pacing = TransportPacing.configured
        #if canImport(CBlueZ)
        var mgmt: MgmtSocket?
        #endif
    }

    /// Inbound channels a remote made fail, by kind (`dropped_inbound`, `accept_failed`),
    /// since ``listen(context:)`` started accepting; shown by `scmesh status`.
    public var counters: [String: Int] {
        failureLog.withLock { $0?.totals ?? [:] }
    }

    /// Creates a transport; nothing touches the radio before ``listen(context:)``.
    /// - Parameters:
    ///   - configuration: the settings (validated in ``listen(context:)``).
    ///   - beaconHash: the hash for the beacon's ephemeral identifier (see
    ///     ``BLEBeaconSchedule``); nil advertises random identifiers.
    public init(configuration: Configuration = Configuration(), beaconHash: BLEBeaconSchedule.Hash? = nil) {
        self.configuration = configuration
        self.beaconHash = beaconHash
    }

    /// Small MTU, low bitrate, reliable (credit-based channels lose nothing), needs
    /// discovery, high power cost.
    public var capabilities: TransportCapabilities {
        TransportCapabilities(
            maxFrameSize: Self.defaultMTU,
            nominalBitrate: Self.nominalBitrate,
            isReliable: true,
            needsDiscovery: true,
            powerCost: 8
        )
    }

    /// The receive MTU the transport asks for on its channels (the kernel's LE default).
    public static let defaultMTU = 672

    /// This node's address while ``listen(context:)`` runs: adapter address, type and PSM.
    public var localAddress: BLEPeerAddress? { state.withLock { $0.local } }

    /// Peers whose beacons the transport should recognise: a discovered hint then
    /// carries the peer's ID. Needs a `beaconHash`.
    public func setKnownPeers(_ peers: some Sequence<PeerID>) {
        let set = Set(peers)
        state.withLock { $0.knownPeers = set }
    }

    /// The links currently open.
    public var openLinkCount: Int { state.withLock { $0.links.count } }

    /// Checks the adapter, listens on the PSM, advertises, reports `.listening` with its
    /// address (`"<bdaddr>/public/<psm>"`) and discovers until the calling task is
    /// cancelled; then withdraws the advertising, stops discovery and closes the
    /// listener and every link.
    /// - Throws: `.invalidConfiguration` for a bad setting; `.transportUnavailable` with
    ///   one line when the kernel has no Bluetooth or the adapter is missing, down or
    ///   without LE; `.invalidArgument` when called twice.
    public func listen(context: TransportContext) async throws {
        let proceed = state.withLock { state -> Bool in
            guard state.phase == .idle else { return false }
            state.phase = .starting
            return true
        }
        guard proceed else {
            throw MeshError(.invalidArgument, "BLETransport.listen was called twice; make a new transport")
        }
        defer { state.withLock { $0.phase = .stopped } }
        try configuration.validate()
        #if canImport(CBlueZ)
        try await run(context: context)
        #else
        throw MeshError(
            .transportUnavailable,
            "BLE unavailable: SCMesh was built without the BLE trait (needs libbluetooth-dev)"
        )
        #endif
    }

    /// Opens a link to a `"ble"` hint (discovery pauses meanwhile: the kernel connects
    /// when its scan sees the peer's advertising again): an L2CAP LE channel, else (with
    /// `data_path: auto` and GATT on) the remote's GATT service; with `data_path: gatt`
    /// GATT only.
    /// - Throws: `.dialFailed` when nothing answers, `.invalidArgument` for a bad hint,
    ///   `.notRunning` when ``listen(context:)`` is not running.
    public func dial(_ hint: PeerHint) async throws -> any Link {
        guard hint.transport == name else {
            throw MeshError(.invalidArgument, "the ble transport cannot dial a \(hint.transport) hint (\(hint))")
        }
        let remote = try BLEPeerAddress(parsing: hint.address)
        #if canImport(CBlueZ)
        guard let local = state.withLock({ $0.phase == .running ? $0.local : nil }) else {
            throw MeshError(
                .notRunning,
                "the ble transport is not running; run listen(context:) before dialling \(hint.address)"
            )
        }
        await beginDial()
        do {
            let link = try await dialPaths(local: local, remote: remote)
            await endDial()
            return link
        } catch {
            await endDial()
            throw error
        }
        #else
        throw MeshError(
            .transportUnavailable,
            "BLE unavailable: SCMesh was built without the BLE trait (needs libbluetooth-dev)"
        )
        #endif
    }

    #if canImport(CBlueZ)
    /// Tries the data paths in the configured order; the first link wins.
    private func dialPaths(local: BLEPeerAddress, remote: BLEPeerAddress) async throws -> any Link {
        var failures: [String] = []
        var lastError: (any Error)?
        for path in configuration.dataPath.dialOrder(gattEnabled: configuration.gatt) {
            do {
                switch path {
                case .l2cap: return try await connect(local: local, remote: remote)
                case .gatt: return try await connectGATT(local: local, remote: remote)
                }
            } catch {
                if error is CancellationError { throw error }
                failures.append("\(path.rawValue): \((error as? MeshError)?.message ?? "\(error)")")
                lastError = error
                if path == .l2cap, configuration.dataPath.dialOrder(gattEnabled: configuration.gatt).count > 1 {
                    state.withLock { $0.logger }?.info(
                        "BLE: no L2CAP channel to \(remote) (\(failures.last!)); trying GATT"
                    )
                }
            }
        }
        guard failures.count > 1, let lastError else {
            throw lastError ?? MeshError(.dialFailed, "BLE dial to \(remote) failed")
        }
        throw MeshError(
            .dialFailed,
            "BLE dial to \(remote) failed on every data path (\(failures.joined(separator: "; ")))",
            cause: lastError
        )
    }
    #endif

    #if canImport(CBlueZ)
    // MARK: - Running

    /// What start-up made.
    struct Started {
        var local: BLEPeerAddress
        /// The L2CAP listener; nil with `data_path: gatt`.
        var listenFD: Int32?
        /// The ATT listener; nil without GATT.
        var attFD: Int32?
        var schedule: BLEBeaconSchedule
    }

    func run(context: TransportContext) async throws {
        let logger = context.logger
        let mgmt: MgmtSocket
        do {
            mgmt = try MgmtSocket()
        } catch {
            throw Self.unavailable(error)
        }
        let (jobs, jobsContinuation) = AsyncStream.makeStream(of: (@Sendable () async -> Void).self)
        state.withLock {
            $0.mgmt = mgmt
            $0.logger = logger
            $0.context = context
            $0.jobs = jobsContinuation
        }
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await mgmt.run() }
            let started: Started
            do {
                started = try await prepare(mgmt: mgmt, context: context)
            } catch {
                await shutDown(mgmt: mgmt, withdraw: false)
                throw error
            }
            // Running first: the loops run while it lasts.
            state.withLock { $0.phase = .running }
            if let listenFD = started.listenFD {
                group.addTask { await self.acceptLoop(listenFD: listenFD, context: context) }
            }
            if let attFD = started.attFD {
                group.addTask { await self.attAcceptLoop(listenFD: attFD, context: context) }
            }
            group.addTask { await self.eventLoop(mgmt: mgmt, context: context) }
            group.addTask { await self.rotationLoop(mgmt: mgmt, schedule: started.schedule, logger: logger) }
            group.addTask { await self.lostLoop(context: context) }
            let paths = [
                started.listenFD.map { _ in "L2CAP PSM \(started.local.description.split(separator: "/").last!)" },
                started.attFD.map { _ in "GATT" },
            ]
            logger.info(
                "BLE: listening on \(started.local) (\(configuration.adapter); \(paths.compactMap { $0 }.joined(separator: " + "))); advertising \(BLEMeshAdvertisement.serviceUUIDString)"
            )
            context.report(.listening(addresses: [started.local.description]))
            // Until cancelled (the stream's iteration ends then): jobs become child tasks.
            for await job in jobs { group.addTask { await job() } }
            await shutDown(mgmt: mgmt, withdraw: true)
        }
    }

    /// Refuses new links, withdraws the advertising and stops discovery (without waiting
    /// for replies: the mgmt reader was cancelled with the rest), closes the mgmt socket
    /// and every link. The accept loop closes the listener as it ends.
    private func shutDown(mgmt: MgmtSocket, withdraw: Bool) async {
        let links = state.withLock { state in
            state.phase = .stopped
            state.jobs?.finish()
            defer {
                state.links = [:]
                state.gattConnections = [:]
                state.peripheralGATTLinks = [:]
                state.mgmt = nil
                state.jobs = nil
            }
            return state.links.values.map { $0 as any Link } + state.gattConnections.values.map { $0.bearer }
        }
        if withdraw {
            let index = configuration.adapterIndex
            try? await mgmt.post(MgmtSocket.Opcode.removeAdvertising, index: index, [Self.advertisingInstance])
            try? await mgmt.post(MgmtSocket.Opcode.stopDiscovery, index: index, [MgmtSocket.leDiscoveryType])
        }
        await mgmt.close()
        for link in links { await link.close() }
    }
    #endif
}
