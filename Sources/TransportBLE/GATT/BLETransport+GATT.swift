#if canImport(CBlueZ)
import CBlueZ
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MeshCore
import Synchronization
#endif

extension BLETransport {
    /// A data path a link can take.
    public enum DataPathKind: String, Sendable, Hashable {
        /// An L2CAP LE credit-based channel on the node's PSM (the faster path).
        case l2cap
        /// The seed profile's GATT characteristics over the ATT fixed channel.
        case gatt
    }
}

#if canImport(CBlueZ)
extension BLETransport {
    /// The ATT MTU the GATT side offers and asks for.
    static let attMTU = ATTPDU.maximumMTU
    /// How long a GATT client set-up (MTU, discovery, subscription) may take.
    static let gattSetUpTimeout: Duration = .seconds(15)

    /// The identity characteristic's value now.
    func currentIdentity() -> [UInt8] {
        let (schedule, listening) = state.withLock { ($0.schedule, $0.listeningPSM) }
        let psm = UInt16(configuration.psm)
        let beacon =
            schedule?.beacon(psm: psm, at: Posix.unixTime())
            ?? BLEBeacon(psm: psm, ephemeralID: Array(repeating: 0, count: 8))
        return GATTIdentity(beacon: beacon, listeningPSM: listening).encoded()
    }

    /// Opens the ATT listener (the GATT server's way in), or nil with one log line when
    /// the kernel refuses and GATT is not the only path.
    func openATTListener(local: BLEPeerAddress, logger: Logger) throws -> Int32? {
        do {
            let fd = try ATTSocket.socket(local: local.bytes, type: local.type)
            do {
                try L2CAP.listen(fd)
            } catch {
                _ = Glibc.close(fd)
                throw error
            }
            return fd
        } catch {
            guard configuration.dataPath != .gatt else {
                throw MeshError(
                    .transportUnavailable,
                    "BLE unavailable: cannot serve GATT on \(configuration.adapter): \(Self.explain(error)) (data_path is gatt)",
                    cause: error
                )
            }
            logger.warning("BLE: no GATT server on \(configuration.adapter) (\(Self.explain(error))); L2CAP only")
            return nil
        }
    }

    /// Accepts ATT channels until cancelled: each gets a GATT server; one whose client
    /// subscribes to RX becomes an inbound link.
    func attAcceptLoop(listenFD: Int32, context: TransportContext) async {
        defer { _ = Glibc.close(listenFD) }
        let logger = context.logger
        await withDiscardingTaskGroup { group in
            while isRunningOrStarting {
                do {
                    guard let (fd, peer) = try L2CAP.accept(listenFD) else {
                        try await FDReactor.shared.wait(listenFD, for: .readable)
                        continue
                    }
                    let type: BLEPeerAddress.AddressType = peer.l2_bdaddr_type == 2 ? .random : .public
                    let text =
                        (try? BLEPeerAddress(bytes: L2CAP.addressBytes(peer), type: type, psm: 0))
                        .map { "\($0.deviceAddress)/\($0.type)/gatt" } ?? "unknown/gatt"
                    // makeGATTConnection owns the descriptor, also when it throws.
                    guard let connection = try? makeGATTConnection(fd: fd, remoteAddress: text) else { continue }
                    // The ATT reader runs on the reactor thread (FDReactor+Executor.swift).
                    group.addTask(executorPreference: FDReactor.shared.taskExecutor) {
                        let reason = await connection.run()
                        logger.debug("BLE: GATT bearer from \(text) ended: \(reason)")
                    }
                    group.addTask { await self.servePeripheral(connection, remoteAddress: text, context: context) }
                } catch is CancellationError {
                    return
                } catch {
                    guard isRunningOrStarting else { return }
                    logger.debug("BLE: ATT accept failed: \(error)")
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
        }
    }

    /// Waits for the remote's client to subscribe to RX on `connection` (accepted or
    /// dialled: when both devices dial, the one bearer carries a link each way), then
    /// reports the peripheral link as inbound.
    func servePeripheral(_ connection: GATTConnection, remoteAddress text: String, context: TransportContext) async {
        guard await connection.waitForSubscription() else { return }
        let box = Mutex<ObjectIdentifier?>(nil)
        let link = GATTLink(
            connection: connection,
            role: .peripheral,
            remoteAddress: text,
            preferredTaskExecutor: linkTaskExecutor,
            logger: context.logger,
            onClose: { [weak self] in if let key = box.withLock({ $0 }) { self?.untrack(key) } }
        )
        box.withLock { $0 = ObjectIdentifier(link) }
        track(link)
        context.logger.debug("BLE: GATT client \(text) subscribed (ATT MTU \(connection.mtu))")
        context.report(.inboundLink(link))
    }

    /// Wraps an ATT socket in a bearer and a connection the transport tracks (closed at
    /// shutdown; forgotten when the bearer closes). Takes ownership of `fd`: it is
    /// closed here when this throws.
    func makeGATTConnection(fd: Int32, remoteAddress: String) throws -> GATTConnection {
        let box = Mutex<ObjectIdentifier?>(nil)
        let bearer: SeqPacketLink
        do {
            bearer = try SeqPacketLink(
                adopting: fd,
                transportName: "ble (ATT)",
                remoteAddress: remoteAddress,
                mtu: Self.attMTU,
                receiveMTU: 672,
                onClose: { [weak self] _ in
                    if let key = box.withLock({ $0 }) {
                        self?.state.withLock { _ = $0.gattConnections.removeValue(forKey: key) }
                    }
                },
                unsentBytes: { Int(cbluez_unsent_bytes($0)) }
            )
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
        let connection = GATTConnection(bearer: bearer, identity: currentIdentity())
        let key = ObjectIdentifier(connection)
        box.withLock { $0 = key }
        let accepted = state.withLock { state -> Bool in
            guard state.phase == .running || state.phase == .starting else { return false }
            state.gattConnections[key] = connection
            return true
        }
        // Not accepted: the bearer's deinit closes the descriptor.
        guard accepted else { throw MeshError(.notRunning, "the ble transport stopped") }
        return connection
    }

    /// Dials the remote's GATT server: ATT channel, MTU exchange, discovery, RX
    /// subscription; the link writes TX. When the remote's LE connection already has an
    /// ATT bearer (our listener accepted it: the kernel allows one ATT channel per
    /// connection, a second `connect` fails with `EBUSY`), the client runs on that one,
    /// beside the remote's link there (the core then closes one of the two as a
    /// duplicate, which leaves the other running: ``GATTConnection/detach(_:)``).
    func connectGATT(local: BLEPeerAddress, remote: BLEPeerAddress) async throws -> GATTLink {
        let text = "\(remote.deviceAddress)/\(remote.type)/gatt"
        let existing = state.withLock { $0.gattConnections.values.first { $0.bearer.remoteAddress == text } }
        if let existing {
            // One client per bearer: its notifications have one reader.
            guard !existing.hasLink(.central) else {
                throw MeshError(
                    .dialFailed,
                    "BLE GATT dial to \(remote.deviceAddress) not needed: this node's GATT link to it is up"
                )
            }
            if let link = try? await setUpCentral(existing, local: local, remote: remote) { return link }
        }
        let fd: Int32
        do {
            fd = try ATTSocket.socket(local: local.bytes, type: local.type)
        } catch {
            throw MeshError(.dialFailed, "BLE GATT dial to \(remote.deviceAddress) failed: \(error)", cause: error)
        }
        do {
            if try !ATTSocket.startConnect(fd, to: remote) {
                try await waitConnected(fd)
            }
        } catch let error as SystemError {
            _ = Glibc.close(fd)
            throw MeshError(
                .dialFailed,
                "BLE GATT dial to \(remote.deviceAddress) failed: \(Self.explain(error))",
                cause: error
            )
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
        let connection = try makeGATTConnection(fd: fd, remoteAddress: text)
        // The reader lives as long as the bearer: it ends when the last link on it closes.
        let (logger, context) = state.withLock { ($0.logger, $0.context) }
        Task(executorPreference: FDReactor.shared.taskExecutor) {
            let reason = await connection.run()
            logger?.debug("BLE: GATT bearer to \(text) ended: \(reason)")
        }
        // The remote may be dialling too: its client then runs on this bearer (the
        // kernel's one ATT channel per connection), and its link must come up here,
        // or it fails its handshake and closes (the core keeps one of the two links).
        if let context {
            spawn { [weak self] in await self?.servePeripheral(connection, remoteAddress: text, context: context) }
        }
        do {
            return try await setUpCentral(connection, local: local, remote: remote)
        } catch {
            await connection.close()
            throw error
        }
    }

    /// Runs the client set-up on a bearer, bounded by ``gattSetUpTimeout`` (which
    /// closes the bearer); the link may move to L2CAP later (``scheduleMove``).
    private func setUpCentral(
        _ connection: GATTConnection,
        local: BLEPeerAddress,
        remote: BLEPeerAddress
    ) async throws -> GATTLink {
        let text = "\(remote.deviceAddress)/\(remote.type)/gatt"
        let timeout = Task {
            try await Task.sleep(for: Self.gattSetUpTimeout)
            await connection.close()
        }
        do {
            let profile = try await connection.setUpClient(requestedMTU: Self.attMTU)
            timeout.cancel()
            state.withLock { $0.logger }?.debug(
                "BLE: GATT link to \(text): ATT MTU \(profile.mtu), TX \(profile.txHandle), RX \(profile.rxHandle)"
            )
            let link = GATTLink(
                connection: connection,
                role: .central(txHandle: profile.txHandle),
                remoteAddress: text,
                preferredTaskExecutor: linkTaskExecutor,
                writeWindow: configuration.gattWriteWindow,
                logger: state.withLock { $0.logger }
            )
            scheduleMove(link, local: local, remote: remote, identityHandle: profile.identityHandle)
            return link
        } catch {
            timeout.cancel()
            throw error
        }
    }
}
#endif
