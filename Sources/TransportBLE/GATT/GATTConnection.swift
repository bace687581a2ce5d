import MeshCore
import Synchronization

/// One ATT bearer (the kernel's ATT fixed channel, or any packet ``Link`` in tests)
/// with both GATT roles on it: the seed profile's ``GATTServer`` answers the remote's
/// requests, and client procedures (``request(_:)``) run against the remote's server.
///
/// ``run()`` reads PDUs until the bearer ends and sorts them: requests and commands go
/// to the server (its response is sent back), responses complete the one outstanding
/// client request, writes to the local TX are inbound frames of the peripheral link
/// (``writtenFrames``), notifications of the remote's RX those of the central link
/// (``notifiedFrames``); indications are confirmed. Both links may share one bearer. ATT allows one
/// outstanding request per direction; ``request(_:)`` keeps to it.
///
/// **Two links, one bearer.** When both devices dial, the kernel's one ATT channel per LE
/// connection carries a link in each direction, and the core closes one of the pair as a
/// duplicate. So a link ends on its own (``detach(_:)``): the central's end tells the
/// remote by switching RX notifications off, which ends the remote's peripheral link; the
/// bearer closes only when the last link on it ends.
package final class GATTConnection: Sendable {
    /// Which of this bearer's two links: the one this side's client runs, or the one the
    /// remote's client runs against this side's server.
    package enum Side: Sendable, Hashable {
        /// This side writes the remote's TX and receives its RX notifications.
        case central
        /// This side notifies its RX and receives writes to its TX.
        case peripheral
    }

    /// The bearer PDUs travel on (one PDU per packet).
    package let bearer: any Link
    /// Frames the remote client wrote to our TX (the peripheral link's inbound frames).
    package let writtenFrames = BoundedChannel<[UInt8]>(capacity: GATTConnection.frameCapacity)
    /// Frames the remote server notified on its RX (the central link's inbound frames).
    package let notifiedFrames = BoundedChannel<[UInt8]>(capacity: GATTConnection.frameCapacity)
    /// Frames that may wait unread. A TX write finding the queue full waits (its Write
    /// Response with it, which holds the remote's next write back); a notification
    /// finding it full closes the bearer: notifications have no flow control, and
    /// waiting would hold up the Write Responses queued behind them (the node's own
    /// sends), which could wait on the reader of this very queue.
    package static let frameCapacity = 1024

    private struct State {
        var server: GATTServer
        var pending: CheckedContinuation<ATTPDU, any Error>?
        var remoteRXHandle: UInt16?
        /// The remote RX's CCCD (written to switch notifications off when the central
        /// link ends).
        var remoteRXCCCDHandle: UInt16?
        /// The links on this bearer that have not ended.
        var attached: Set<Side> = []
        var subscriptionWaiters: [CheckedContinuation<Bool, Never>] = []
        var ended = false
        var endReason: String?
        /// The ATT MTU agreed in an exchange this side started (else the server's view).
        var clientMTU: Int?
    }

    private let state: Mutex<State>
    private let requestLock = AsyncLock()

    /// A connection serving `identity` on `bearer`.
    package init(bearer: any Link, identity: [UInt8]) {
        self.bearer = bearer
        self.state = Mutex(State(server: GATTServer(identity: identity)))
    }

    /// The ATT MTU in force on this bearer.
    package var mtu: Int { state.withLock { $0.clientMTU ?? $0.server.mtu } }

    /// Whether the remote client enabled RX notifications.
    package var remoteSubscribed: Bool { state.withLock { $0.server.notifying } }

    /// Replaces the identity value (the beacon rotated).
    package func setIdentity(_ identity: [UInt8]) {
        state.withLock { $0.server.identity = identity }
    }

    /// Sets the remote RX value handle whose notifications are inbound frames, and its
    /// CCCD.
    package func setRemoteRX(_ handle: UInt16, cccd: UInt16) {
        state.withLock {
            $0.remoteRXHandle = handle
            $0.remoteRXCCCDHandle = cccd
        }
    }

    /// Whether a link of `side` runs on this bearer.
    package func hasLink(_ side: Side) -> Bool {
        state.withLock { $0.attached.contains(side) }
    }

    /// A link of `side` starts on this bearer (``GATTLink`` calls it).
    package func attach(_ side: Side) {
        _ = state.withLock { $0.attached.insert(side) }
    }

    /// The link of `side` ended: its inbound queue is finished (later frames for it are
    /// dropped); a central's end switches the remote's RX notifications off (a Write
    /// Command to the CCCD), which ends the remote's peripheral link; the bearer closes
    /// when no link is left on it.
    package func detach(_ side: Side) async {
        let (unsubscribe, last) = state.withLock { state -> (UInt16?, Bool) in
            state.attached.remove(side)
            var unsubscribe: UInt16?
            if side == .central {
                unsubscribe = state.ended ? nil : state.remoteRXCCCDHandle
                state.remoteRXHandle = nil
                state.remoteRXCCCDHandle = nil
            }
            return (unsubscribe, state.attached.isEmpty)
        }
        switch side {
        case .central: notifiedFrames.finish()
        case .peripheral: writtenFrames.finish()
        }
        if let unsubscribe {
            // Best effort: a bearer that is going away ends the remote's link anyway.
            try? await bearer.send(ATTPDU.writeCommand(handle: unsubscribe, value: [0x00, 0x00]).encoded())
        }
        if last { await bearer.close() }
    }

    /// Reads and dispatches PDUs until the bearer ends or fails; then fails the
    /// outstanding request, finishes both frame queues and wakes subscription waiters.
    /// - Returns: why the bearer ended.
    @discardableResult
    package func run() async -> String {
        var reason = "the remote disconnected"
        do {
            while let pdu = try await bearer.receive() {
                try await dispatch(pdu)
            }
        } catch {
            reason = "\(error)"
            await bearer.close()
        }
        end(reason)
        return reason
    }

    private func dispatch(_ bytes: [UInt8]) async throws {
        guard let opcode = bytes.first else { return }
        switch ATTPDU.kind(of: opcode) {
        case .request, .command:
            let (response, events) = state.withLock { $0.server.handle(bytes) }
            for event in events {
                switch event {
                case .received(let frame):
                    _ = await writtenFrames.send(frame)
                case .subscribed(let on):
                    // The remote client switched RX off: its link (our peripheral one) ended.
                    if !on { writtenFrames.finish() }
                    let waiters = state.withLock { state in
                        defer { state.subscriptionWaiters = [] }
                        return state.subscriptionWaiters
                    }
                    for waiter in waiters { waiter.resume(returning: on) }
                }
            }
            // The response goes out after the frame was queued: a full queue holds the
            // client's next write back (its write request waits for this response).
            if let response { try await bearer.send(response) }
        case .response:
            let continuation = state.withLock { state in
                defer { state.pending = nil }
                return state.pending
            }
            guard let continuation else { return }  // a stray response: ignore it
            do {
                continuation.resume(returning: try ATTPDU(decoding: bytes))
            } catch {
                continuation.resume(throwing: error)
            }
        case .serverInitiated:
            guard let pdu = try? ATTPDU(decoding: bytes) else { return }
            switch pdu {
            case .notification(let handle, let value), .indication(let handle, let value):
                if handle == state.withLock({ $0.remoteRXHandle }) {
                    // This reader is the only producer, so a queue below capacity takes
                    // the frame without waiting.
                    guard notifiedFrames.count < Self.frameCapacity else {
                        throw MeshError(
                            .linkClosed,
                            "\(Self.frameCapacity) notified frames from \(bearer.remoteAddress) wait unread; closing the GATT link"
                        )
                    }
                    _ = await notifiedFrames.send(value)
                }
                if case .indication = pdu { try await bearer.send(ATTPDU.confirmation.encoded()) }
            default:
                return
            }
        case .confirmation:
            return
        }
    }

    private func end(_ reason: String) {
        let (pending, waiters) = state.withLock { state in
            state.ended = true
            state.endReason = reason
            defer {
                state.pending = nil
                state.subscriptionWaiters = []
            }
            return (state.pending, state.subscriptionWaiters)
        }
        let error = MeshError(.linkClosed, "GATT bearer to \(bearer.remoteAddress) ended: \(reason)")
        pending?.resume(throwing: error)
        for waiter in waiters { waiter.resume(returning: false) }
        requestLock.fail(error)
        writtenFrames.finish()
        notifiedFrames.finish()
    }

    /// Waits until the remote client enables RX notifications; false when the bearer
    /// ended first (or the client switched them off).
    package func waitForSubscription() async -> Bool {
        await withCheckedContinuation { continuation in
            let answer = state.withLock { state -> Bool? in
                if state.server.notifying { return true }
                if state.ended { return false }
                state.subscriptionWaiters.append(continuation)
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Sends one request and returns the remote's response (an Error Response is
    /// returned, not thrown). One request is outstanding at a time.
    /// - Throws: `.linkClosed` when the bearer ends first, `.malformedFrame` for an
    ///   undecodable response.
    package func request(_ pdu: ATTPDU) async throws -> ATTPDU {
        try await requestLock.withLock {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ATTPDU, any Error>) in
                let ended = state.withLock { state -> String? in
                    if state.ended { return state.endReason ?? "closed" }
                    state.pending = continuation
                    return nil
                }
                if let ended {
                    continuation.resume(
                        throwing: MeshError(.linkClosed, "GATT bearer to \(bearer.remoteAddress) ended: \(ended)")
                    )
                    return
                }
                let bytes = pdu.encoded()
                Task(executorPreference: FDReactor.shared.taskExecutor) {
                    do {
                        try await self.bearer.send(bytes)
                    } catch {
                        let waiting = self.state.withLock { state in
                            defer { state.pending = nil }
                            return state.pending
                        }
                        waiting?.resume(throwing: error)
                    }
                }
            }
        }
    }

    /// Sends a PDU that expects no response (a command, a notification).
    package func sendUnacknowledged(_ pdu: [UInt8]) async throws {
        try await bearer.send(pdu)
    }

    /// Records the MTU agreed by an exchange this side started.
    package func setAgreedMTU(_ mtu: Int) {
        state.withLock {
            $0.clientMTU = mtu
            $0.server.mtu = mtu
        }
    }

    /// Closes the bearer; ``run()`` ends.
    package func close() async {
        await bearer.close()
    }
}
