import Logging
import Synchronization

/// Handshake messages over a link, through the packet framer.
final class LinkHandshakeChannel: HandshakeChannel {
    let link: any Link
    private let reassembler = Mutex(PacketReassembler())

    init(link: any Link) {
        self.link = link
    }

    func send(_ message: [UInt8]) async throws {
        for packet in try PacketFramer.packets(for: message, mtu: link.mtu) {
            try await link.send(packet)
        }
    }

    func receive() async throws -> [UInt8] {
        while true {
            guard let packet = try await link.receive() else {
                throw MeshError(.linkClosed, "link to \(link.remoteAddress) closed during the handshake")
            }
            let output = try reassembler.withLock { reassembler throws(MeshError) in try reassembler.feed(packet) }
            if case .segment(let segment) = output { return segment }
        }
    }
}

/// One authenticated link in use by the router: sequence numbers, the in-flight
/// window, hop acknowledgements, RTT, keepalive and health.
///
/// Three loops run per session (``run(deliver:)``): the reader (never writes, so two
/// back-pressured peers cannot deadlock), the control writer (acks and pongs,
/// coalesced) and the ticker (ack timeouts, keepalive, dead-link detection).
final class LinkSession: Sendable {
    let link: any Link
    let id: LinkID
    let transport: String
    let priority: Int
    let capabilities: TransportCapabilities
    let remote: PeerID
    let role: HandshakeRole
    let cipher: any SessionCipher
    let configuration: RouterConfiguration
    let logger: Logger

    private let writeLock = AsyncLock()
    private let window: AsyncSemaphore
    private let controlSignal: AsyncStream<Void>.Continuation
    private let controlStream: AsyncStream<Void>
    private let state: Mutex<State>

    enum AcceptResult: Sendable {
        /// Take the frame and acknowledge it.
        case accepted
        /// Already had it: acknowledge, do not deliver again.
        case duplicate
        /// Refused: do not acknowledge (the sender will escalate).
        case refused
    }

    private struct Waiter {
        var continuation: CheckedContinuation<Void, any Error>?
        var result: Result<Void, MeshError>?
        var sentAt: ContinuousClock.Instant?
        var deadline: ContinuousClock.Instant?
        var timeout: Duration
    }

    private struct State {
        var nextSequence: UInt32 = 1
        var waiters: [UInt32: Waiter] = [:]
        var ackedThrough: UInt32 = 0
        var smoothedRTT: Double?
        var consecutiveFailures = 0
        var closed: MeshError?
        // Receiving side.
        var receivedThrough: UInt32 = 0
        var receivedAbove: Set<UInt32> = []
        var ackOwed = false
        var pongsOwed: [UInt64] = []
        var pingOwed = false
        var pingNonce: UInt64 = 0
        var pingSentAt: (nonce: UInt64, at: ContinuousClock.Instant)?
        var lastReceived: ContinuousClock.Instant = .now
        var lastPingSent: ContinuousClock.Instant = .now
        var framesSent = 0
        var framesReceived = 0
    }

    static let maxOutOfOrder = 4096

    init(
        link: any Link, id: LinkID, transport: String, priority: Int, capabilities: TransportCapabilities, remote: PeerID,
        role: HandshakeRole, cipher: any SessionCipher, configuration: RouterConfiguration, logger: Logger
    ) {
        self.link = link
        self.id = id
        self.transport = transport
        self.priority = priority
        self.capabilities = capabilities
        self.remote = remote
        self.role = role
        self.cipher = cipher
        self.configuration = configuration
        self.logger = logger
        self.window = AsyncSemaphore(permits: max(1, configuration.windowPerLink))
        (controlStream, controlSignal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.state = Mutex(State())
    }

    // MARK: Views for the router

    var candidate: LinkCandidate {
        state.withLock { state in
            LinkCandidate(
                linkID: id, transport: transport, priority: priority, capabilities: capabilities,
                smoothedRTT: state.smoothedRTT.map { .milliseconds(Int64($0 * 1000)) },
                consecutiveFailures: state.consecutiveFailures)
        }
    }

    var isClosed: Bool { state.withLock { $0.closed != nil } }

    var snapshot: LinkSnapshot {
        state.withLock { state in
            LinkSnapshot(
                id: id.rawValue, transport: transport, priority: priority, address: link.remoteAddress,
                rttMilliseconds: state.smoothedRTT.map { $0 * 1000 }, consecutiveFailures: state.consecutiveFailures,
                inFlight: state.waiters.count, framesSent: state.framesSent, framesReceived: state.framesReceived,
                outbound: role == .initiator)
        }
    }

    func recordFailure() {
        state.withLock { $0.consecutiveFailures += 1 }
    }

    // MARK: Sending

    /// Sends one data frame and waits for its hop acknowledgement.
    /// - Throws: `.ackTimeout` or `.linkClosed`.
    func sendData(_ frame: DataFrame, timeout: Duration) async throws {
        try await window.acquire()
        defer { window.release() }
        var frame = frame
        let sequence: UInt32 = try await writeLock.withLock {
            let sequence = try state.withLock { state throws(MeshError) -> UInt32 in
                if let closed = state.closed { throw closed }
                let sequence = state.nextSequence
                guard sequence < UInt32.max else {
                    throw MeshError(.linkClosed, "link \(id) used up its sequence numbers; it will be re-established")
                }
                state.nextSequence += 1
                state.waiters[sequence] = Waiter(timeout: timeout)
                return sequence
            }
            frame.sequence = sequence
            do {
                try await writeFrameLocked(.data(frame))
            } catch {
                _ = state.withLock { $0.waiters.removeValue(forKey: sequence) }
                throw error
            }
            return sequence
        }
        let now = ContinuousClock.now
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let ready: Result<Void, MeshError>? = state.withLock { state in
                guard var waiter = state.waiters[sequence] else {
                    return .failure(state.closed ?? MeshError(.linkClosed, "link \(id) closed"))
                }
                if let result = waiter.result {
                    state.waiters[sequence] = nil
                    return result
                }
                waiter.continuation = continuation
                waiter.sentAt = now
                waiter.deadline = now + waiter.timeout
                state.waiters[sequence] = waiter
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    private func writeFrameLocked(_ frame: Frame) async throws {
        let sealed = try cipher.seal(frame.encoded())
        state.withLock { $0.framesSent += 1 }
        for packet in try PacketFramer.packets(for: sealed, mtu: link.mtu) {
            try await link.send(packet)
        }
    }

    private func writeControl(_ frames: [Frame]) async throws {
        try await writeLock.withLock {
            for frame in frames { try await writeFrameLocked(frame) }
        }
    }

    // MARK: Receiving

    private func handleAck(_ ack: AckFrame) throws(MeshError) {
        let now = ContinuousClock.now
        var resumes: [CheckedContinuation<Void, any Error>] = []
        try state.withLock { state throws(MeshError) in
            guard ack.cumulative < state.nextSequence else {
                throw MeshError(.malformedFrame, "ack for sequence \(ack.cumulative) which was never sent (next is \(state.nextSequence))")
            }
            var newest: ContinuousClock.Instant?
            func resolve(_ sequence: UInt32, _ state: inout State) {
                guard var waiter = state.waiters[sequence], waiter.result == nil else { return }
                if let sentAt = waiter.sentAt { newest = max(newest ?? sentAt, sentAt) }
                if let continuation = waiter.continuation {
                    state.waiters[sequence] = nil
                    resumes.append(continuation)
                } else {
                    waiter.result = .success(())
                    state.waiters[sequence] = waiter
                }
            }
            if ack.cumulative > state.ackedThrough {
                let span = Int(ack.cumulative - state.ackedThrough)
                if span <= state.waiters.count {
                    for sequence in (state.ackedThrough + 1)...ack.cumulative { resolve(sequence, &state) }
                } else {
                    for sequence in state.waiters.keys where sequence <= ack.cumulative { resolve(sequence, &state) }
                }
                state.ackedThrough = ack.cumulative
            }
            for sequence in ack.selective where sequence > state.ackedThrough && sequence < state.nextSequence {
                resolve(sequence, &state)
            }
            if let newest {
                sample(rtt: now - newest, &state)
                state.consecutiveFailures = 0
            }
        }
        for continuation in resumes { continuation.resume() }
    }

    private func sample(rtt: Duration, _ state: inout State) {
        let seconds = PriorityEscalationPolicy.seconds(rtt)
        if let smoothed = state.smoothedRTT {
            state.smoothedRTT = smoothed * 0.875 + seconds * 0.125
        } else {
            state.smoothedRTT = seconds
        }
    }

    /// Records an inbound data sequence number; returns false when it is too far ahead.
    private func noteReceived(_ sequence: UInt32) -> Bool {
        state.withLock { state in
            if sequence <= state.receivedThrough || state.receivedAbove.contains(sequence) {
                state.ackOwed = true
                return true
            }
            if sequence == state.receivedThrough + 1 {
                state.receivedThrough = sequence
                while state.receivedAbove.remove(state.receivedThrough + 1) != nil {
                    state.receivedThrough += 1
                }
            } else {
                guard state.receivedAbove.count < Self.maxOutOfOrder else { return false }
                state.receivedAbove.insert(sequence)
            }
            state.ackOwed = true
            return true
        }
    }

    /// Runs the reader, control writer and ticker until the link ends.
    /// - Parameter deliver: hands an inbound data frame to the router.
    /// - Returns: why the link ended.
    func run(deliver: @escaping @Sendable (DataFrame, LinkSession) async -> AcceptResult, onMalformed: @escaping @Sendable (MeshError) async -> Void) async -> String {
        let reason: String = await withTaskGroup(of: String?.self) { group in
            group.addTask { await self.readLoop(deliver: deliver, onMalformed: onMalformed) }
            group.addTask {
                await self.controlLoop()
                return nil
            }
            group.addTask { await self.tickLoop() }
            var reason: String?
            while reason == nil, let next = await group.next() {
                reason = next
            }
            let why = reason ?? "closed"
            await self.close(MeshError(.linkClosed, "link \(self.id) to \(self.remote) closed: \(why)"))
            group.cancelAll()
            return why
        }
        return reason
    }

    private func readLoop(
        deliver: @Sendable (DataFrame, LinkSession) async -> AcceptResult, onMalformed: @Sendable (MeshError) async -> Void
    ) async -> String {
        var reassembler = PacketReassembler()
        do {
            while let packet = try await link.receive() {
                state.withLock { $0.lastReceived = .now }
                let segment: [UInt8]
                switch try reassembler.feed(packet) {
                case .needMore: continue
                case .segment(let bytes): segment = bytes
                }
                let plain: [UInt8]
                do {
                    plain = try cipher.open(segment)
                } catch {
                    let meshError = (error as? MeshError) ?? MeshError(.malformedFrame, "frame failed to decrypt", cause: error)
                    await onMalformed(meshError)
                    return "rejected input: \(meshError.message)"
                }
                let frame = try Frame.decode(plain, maxMessageLength: configuration.maxMessageSize)
                state.withLock { $0.framesReceived += 1 }
                switch frame {
                case .data(let data):
                    let result = await deliver(data, self)
                    switch result {
                    case .accepted, .duplicate:
                        if noteReceived(data.sequence) { controlSignal.yield() }
                    case .refused:
                        break
                    }
                case .ack(let ack):
                    try handleAck(ack)
                case .ping(let nonce):
                    state.withLock { state in
                        if state.pongsOwed.count < 16 { state.pongsOwed.append(nonce) }
                    }
                    controlSignal.yield()
                case .pong(let nonce):
                    let now = ContinuousClock.now
                    state.withLock { state in
                        if let ping = state.pingSentAt, ping.nonce == nonce {
                            sample(rtt: now - ping.at, &state)
                            state.pingSentAt = nil
                            state.consecutiveFailures = 0
                        }
                    }
                }
            }
            return "remote closed the link"
        } catch let error as MeshError where error.code == .malformedFrame || error.code == .frameTooLarge {
            await onMalformed(error)
            return "rejected input: \(error.message)"
        } catch {
            return "link failed: \(error)"
        }
    }

    private func controlLoop() async {
        for await _ in controlStream {
            let frames: [Frame] = state.withLock { state in
                var frames: [Frame] = []
                if state.ackOwed {
                    state.ackOwed = false
                    let selective = state.receivedAbove.sorted().prefix(Frame.maxSelectiveAcks)
                    frames.append(.ack(AckFrame(cumulative: state.receivedThrough, selective: Array(selective))))
                }
                for nonce in state.pongsOwed { frames.append(.pong(nonce: nonce)) }
                state.pongsOwed.removeAll()
                if state.pingOwed {
                    state.pingOwed = false
                    state.pingNonce &+= 1
                    state.pingSentAt = (state.pingNonce, .now)
                    state.lastPingSent = .now
                    frames.append(.ping(nonce: state.pingNonce))
                }
                return frames
            }
            guard !frames.isEmpty else { continue }
            do {
                try await writeControl(frames)
            } catch {
                return
            }
        }
    }

    /// Times out waiters, pings idle or degraded links, detects dead links.
    private func tickLoop() async -> String? {
        let minimum = PriorityEscalationPolicy.seconds(configuration.escalation.ackTimeoutMin)
        let tick = Duration.milliseconds(Int64(max(5, min(50, minimum * 1000 / 4))))
        while !Task.isCancelled {
            do { try await Task.sleep(for: tick) } catch { return nil }
            let now = ContinuousClock.now
            var expired: [CheckedContinuation<Void, any Error>] = []
            var wantPing = false
            var dead = false
            state.withLock { state in
                for (sequence, waiter) in state.waiters {
                    guard let deadline = waiter.deadline, deadline < now, let continuation = waiter.continuation else { continue }
                    state.waiters[sequence] = nil
                    expired.append(continuation)
                }
                if !expired.isEmpty { state.consecutiveFailures += 1 }
                let idle = now - state.lastReceived
                if idle > configuration.keepaliveInterval * 3 {
                    dead = true
                } else if state.pingSentAt.map({ now - $0.at > configuration.keepaliveInterval }) ?? false {
                    state.pingSentAt = nil  // unanswered; try again
                }
                let degraded = state.consecutiveFailures >= configuration.escalation.degradeAfterFailures
                let pingEvery = degraded ? min(configuration.keepaliveInterval, .seconds(1)) : configuration.keepaliveInterval
                if state.pingSentAt == nil && (now - state.lastPingSent > pingEvery) && (degraded || idle > pingEvery / 2) {
                    wantPing = true
                    state.pingOwed = true
                }
            }
            for continuation in expired {
                continuation.resume(throwing: MeshError(.ackTimeout, "no hop acknowledgement on \(transport) \(id) within the ack timeout"))
            }
            if dead {
                return "no traffic for \(configuration.keepaliveInterval * 3) (dead link)"
            }
            if wantPing { controlSignal.yield() }
        }
        return nil
    }

    // MARK: Closing

    /// Fails every waiter and closes the link.
    func close(_ error: MeshError) async {
        let continuations: [CheckedContinuation<Void, any Error>] = state.withLock { state in
            if state.closed == nil { state.closed = error }
            let pending = state.waiters.values.compactMap(\.continuation)
            for (sequence, waiter) in state.waiters where waiter.continuation == nil && waiter.result == nil {
                var failed = waiter
                failed.result = .failure(error)
                state.waiters[sequence] = failed
            }
            state.waiters = state.waiters.filter { $0.value.continuation == nil }
            return pending
        }
        for continuation in continuations { continuation.resume(throwing: error) }
        window.fail(error)
        writeLock.fail(error)
        controlSignal.finish()
        await link.close()
    }
}
