import Logging
import MeshCore
import Synchronization

/// A ``Link`` over the seed profile's GATT characteristics on one ATT bearer, which can
/// move to an L2CAP channel to the same device while it runs (docs/PROTOCOL.md §C.1,
/// "Moving a link to L2CAP").
///
/// - **Central** (it dialled, it is the GATT client): ``send(_:)`` writes the frame to
///   the remote's TX with a Write Request and returns on the Write Response, so one write
///   is in flight (the seed's "never overlap writes"); with a ``writeWindow`` W > 1, W − 1
///   frames go as Write Commands (returning once the kernel took each), then one as a
///   Write Request, so at most W writes are unanswered. Frames arrive as notifications of
///   the remote's RX.
/// - **Peripheral** (the remote subscribed to our RX): ``send(_:)`` notifies the frame
///   on RX; frames arrive as writes to our TX.
///
/// Closing the link ends only this link when the remote's link shares the bearer (both
/// devices dialled; see ``GATTConnection``).
///
/// ``mtu`` is the ATT MTU − 3 (a notification's and a write's header) and stays so after
/// a move. The core fragments to it and runs the Noise handshake on the link as on any
/// other.
///
/// **The move.** Each direction switches on its own, marked by an empty write or
/// notification (the core never sends an empty frame): the sender sends the marker as
/// its last packet over GATT and every later packet on the channel; the receiver reads
/// GATT up to the marker and the channel after it. Both paths are reliable and ordered,
/// so nothing is lost or repeated. The central dials the channel, then moves its
/// sending (``moveSending(to:)``); the peripheral, given the channel its accept loop
/// matched to this device (``offerChannel(_:)``), moves its receiving when the marker
/// comes and then its sending.
package final class GATTLink: Link, Sendable {
    /// Which side of the GATT relation this end is.
    package enum Role: Sendable {
        /// GATT client: writes TX, receives RX notifications.
        case central(txHandle: UInt16)
        /// GATT server: notifies RX, receives TX writes.
        case peripheral
    }

    /// The remote's address in the transport's notation.
    package let remoteAddress: String
    /// ATT MTU − 3.
    package let mtu: Int
    /// This end's role.
    package let role: Role
    /// The bearer's connection.
    package let connection: GATTConnection
    private let onClose: (@Sendable () -> Void)?
    private let logger: Logger?
    /// How long a receiver that met the marker waits for the channel before it closes
    /// the link (the remote's later frames are on a channel it does not have).
    package let channelWait: Duration
    /// Where the core runs this link's tasks (the reactor's executor, or nil); kept
    /// after a move to L2CAP, whose channel is served by the same reactor.
    package let preferredTaskExecutor: (any TaskExecutor)?
    /// Central: TX writes that may be unanswered (`gatt_write_window`); 1 = a Write
    /// Request per packet.
    package let writeWindow: Int

    private struct Move {
        /// The L2CAP channel (central: dialled; peripheral: offered by the accept loop).
        var channel: (any Link)?
        /// This end sends on the channel.
        var sending = false
        /// This end reads the channel.
        var receiving = false
        /// A receive that met the marker and waits for the channel.
        var waiter: CheckedContinuation<(any Link)?, Never>?
        var closed = false
        /// Central: Write Commands sent since the last Write Request.
        var commandsSinceRequest = 0
    }

    private let move = Mutex(Move())
    private let sendLock = AsyncLock()

    /// A link on `connection` whose set-up (client discovery and subscription, or the
    /// remote's subscription) is done.
    package init(
        connection: GATTConnection,
        role: Role,
        remoteAddress: String,
        channelWait: Duration = .seconds(10),
        preferredTaskExecutor: (any TaskExecutor)? = nil,
        writeWindow: Int = 1,
        logger: Logger? = nil,
        onClose: (@Sendable () -> Void)? = nil
    ) {
        self.logger = logger
        self.connection = connection
        self.role = role
        self.remoteAddress = remoteAddress
        self.mtu = connection.mtu - 3
        self.channelWait = channelWait
        self.preferredTaskExecutor = preferredTaskExecutor
        self.writeWindow = max(1, writeWindow)
        self.onClose = onClose
        connection.attach(side)
    }

    /// The connection's side this link runs on.
    private var side: GATTConnection.Side {
        switch role {
        case .central: .central
        case .peripheral: .peripheral
        }
    }

    /// Whether this end sends and receives on the L2CAP channel (the move is complete).
    package var isMoved: Bool { move.withLock { $0.sending && $0.receiving } }

    /// Whether this end has a channel, or had one, or is closed: a channel offered now
    /// would not be taken.
    package var takesChannel: Bool { move.withLock { !$0.closed && $0.channel == nil } }

    /// Sends one frame (a TX write or an RX notification; after the move, on the channel).
    /// - Throws: `.frameTooLarge` over ``mtu``, `.invalidArgument` for an empty frame,
    ///   `.linkClosed` when the bearer ended, the remote refused the write, or (as
    ///   peripheral) the remote switched notifications off.
    package func send(_ frame: [UInt8]) async throws {
        guard frame.count <= mtu else {
            throw MeshError(
                .frameTooLarge,
                "frame of \(frame.count) bytes exceeds the GATT link MTU of \(mtu) bytes (ATT MTU − 3); fragment it first"
            )
        }
        guard !frame.isEmpty else { throw MeshError(.invalidArgument, "an empty frame cannot be sent on a GATT link") }
        try await sendLock.withLock {
            // One look at the state per frame: closed (the bearer may outlive this link,
            // the remote's link on it runs on), or moved to the channel.
            let (closed, moved) = move.withLock { ($0.closed, $0.sending ? $0.channel : nil) }
            guard !closed else { throw MeshError(.linkClosed, "the GATT link to \(remoteAddress) is closed") }
            if let channel = moved {
                do {
                    try await channel.send(frame)
                } catch {
                    await close()
                    throw error
                }
                return
            }
            try await sendOverGATT(frame)
        }
    }

    /// One packet over GATT (an empty one is the move marker).
    private func sendOverGATT(_ frame: [UInt8]) async throws {
        switch role {
        case .central(let txHandle):
            // Within the window a packet goes as a Write Command (sent once the kernel
            // took it); the window's last, and the move marker, as a Write Request: its
            // response comes after the server took every earlier write.
            let command = move.withLock { state in
                let command = !frame.isEmpty && state.commandsSinceRequest < writeWindow - 1
                state.commandsSinceRequest = command ? state.commandsSinceRequest + 1 : 0
                return command
            }
            do {
                if command {
                    try await connection.sendUnacknowledged(
                        ATTPDU.writeCommand(handle: txHandle, value: frame).encoded()
                    )
                } else {
                    try await connection.write(handle: txHandle, value: frame)
                }
            } catch let error as MeshError where error.code == .dialFailed {
                await close()
                throw MeshError(.linkClosed, "GATT link to \(remoteAddress): \(error.message)", cause: error)
            }
        case .peripheral:
            guard connection.remoteSubscribed else {
                throw MeshError(.linkClosed, "GATT link to \(remoteAddress): the remote switched RX notifications off")
            }
            try await connection.sendUnacknowledged(
                ATTPDU.notification(handle: GATTServer.rxHandle, value: frame).encoded()
            )
        }
    }

    /// Central: takes the dialled `channel` and moves this end's sending to it (the
    /// marker goes out after any frame being sent). The receiving follows when the
    /// peripheral's marker comes.
    /// - Throws: `.invalidArgument` when the channel's MTU is below ``mtu`` or the link
    ///   already has a channel (the channel is not taken); `.linkClosed` when the marker
    ///   could not be sent (the link closes).
    package func moveSending(to channel: any Link) async throws {
        guard channel.mtu >= mtu else {
            throw MeshError(
                .invalidArgument,
                "the L2CAP channel's MTU \(channel.mtu) is below the GATT link's \(mtu); the link stays on GATT"
            )
        }
        guard offerChannel(channel) else {
            throw MeshError(.invalidArgument, "the GATT link to \(remoteAddress) is closed or already has a channel")
        }
        try await switchSending()
    }

    /// Sends the marker and moves sending to the channel, after any frame in flight.
    private func switchSending() async throws {
        try await sendLock.withLock {
            guard move.withLock({ !$0.sending && $0.channel != nil }) else { return }
            do {
                try await sendOverGATT([])
            } catch {
                await close()
                throw error
            }
            move.withLock { $0.sending = true }
        }
        noteIfMoved()
    }

    /// Gives the link the L2CAP channel from its remote device; false (the channel is
    /// not taken) when the link is closed or has one already.
    @discardableResult
    package func offerChannel(_ channel: any Link) -> Bool {
        let (taken, waiter) = move.withLock { state -> (Bool, CheckedContinuation<(any Link)?, Never>?) in
            guard !state.closed, state.channel == nil else { return (false, nil) }
            state.channel = channel
            defer { state.waiter = nil }
            if state.waiter != nil { state.receiving = true }
            return (true, state.waiter)
        }
        waiter?.resume(returning: channel)
        return taken
    }

    /// The offered channel when no marker claimed it (the remote never moved): the caller
    /// treats it as a link of its own. Nil when the move is under way or done.
    package func withdrawUnclaimedChannel() -> (any Link)? {
        move.withLock { state in
            guard !state.receiving, !state.sending, let channel = state.channel else { return nil }
            state.channel = nil
            return channel
        }
    }

    /// The next frame, nil once the bearer (or, after the move, the channel) ended, or
    /// the remote's move marker came and no channel followed within ``channelWait``.
    package func receive() async throws -> [UInt8]? {
        while true {
            if let channel = move.withLock({ $0.receiving ? $0.channel : nil }) {
                let frame = try await channel.receive()
                if frame == nil { await close() }
                return frame
            }
            let next: [UInt8]?
            switch role {
            case .central: next = await connection.notifiedFrames.receive()
            case .peripheral: next = await connection.writtenFrames.receive()
            }
            guard let frame = next else { return nil }
            if !frame.isEmpty { return frame }
            // The marker: the remote's later frames come on the channel. Without it they
            // are out of reach, so the link ends (the core dials again and resends).
            guard await waitForChannel() != nil else {
                logger?.info(
                    "BLE: GATT link \(remoteAddress) closed: the remote moved to L2CAP but no channel from it came within \(channelWait)"
                )
                await close()
                return nil
            }
            noteIfMoved()
            if case .peripheral = role {
                try await switchSending()
            }
        }
    }

    private func noteIfMoved() {
        if isMoved { logger?.info("BLE: GATT link \(remoteAddress) moved to L2CAP both ways") }
    }

    /// The channel, waiting up to ``channelWait`` for it, now read instead of GATT; nil
    /// when none came or the link closed.
    private func waitForChannel() async -> (any Link)? {
        await withCheckedContinuation { (continuation: CheckedContinuation<(any Link)?, Never>) in
            let ready = move.withLock { state -> (any Link)?? in
                if state.closed { return .some(nil) }
                if let channel = state.channel {
                    state.receiving = true
                    return .some(channel)
                }
                state.waiter = continuation
                return nil
            }
            if let ready {
                continuation.resume(returning: ready)
                return
            }
            let wait = channelWait
            Task {
                try? await Task.sleep(for: wait)
                let waiter = self.move.withLock { state in
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume(returning: nil)
            }
        }
    }

    /// Ends this link and closes its channel; the bearer closes too unless the other
    /// link on it (the remote's, when both dialled) still runs
    /// (``GATTConnection/detach(_:)``). Idempotent.
    package func close() async {
        let (channel, waiter, first) = move.withLock {
            state -> ((any Link)?, CheckedContinuation<(any Link)?, Never>?, Bool) in
            let first = !state.closed
            state.closed = true
            defer { state.waiter = nil }
            return (state.channel, state.waiter, first)
        }
        waiter?.resume(returning: nil)
        guard first else { return }
        await connection.detach(side)
        await channel?.close()
        onClose?()
    }
}
