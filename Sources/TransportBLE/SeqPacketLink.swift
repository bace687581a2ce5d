import Dispatch
import MeshCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A ``Link`` over any connected `SOCK_SEQPACKET` socket: an L2CAP LE credit-based
/// channel in the transport, a `socketpair(AF_UNIX, SOCK_SEQPACKET)` in the unit tests.
/// Both keep message boundaries, so one ``send(_:)`` is one packet is one ``receive()``.
///
/// The descriptor is non-blocking; readiness comes from ``FDReactor``. One write is in
/// flight at a time (the seed app's write-queue rule): ``send(_:)`` returns when the
/// kernel took the packet and suspends while the socket's send buffer is full, so a
/// slow remote (no L2CAP credits) slows the sender.
///
/// Empty frames are refused: on a `SOCK_SEQPACKET` socket a zero-length packet reads
/// like end of stream. (The core never sends one: every packet has a flag byte.)
package final class SeqPacketLink: Link, Sendable {
    /// This link's process-unique ID.
    package let id: LinkID
    /// The transport that made the link (named in errors).
    package let transportName: String
    /// The remote's address in the transport's notation.
    package let remoteAddress: String
    /// Largest frame ``send(_:)`` accepts (`BT_SNDMTU` on L2CAP).
    package let mtu: Int
    /// Largest packet read in one go (`BT_RCVMTU` on L2CAP); a longer one is an error.
    package let receiveMTU: Int
    /// Where the core runs this link's tasks: the reactor's executor when the transport
    /// asked for it (`link_executor: reactor`), else nil (the global pool).
    package let preferredTaskExecutor: (any TaskExecutor)?

    private struct DescriptorState {
        var fd: Int32
        /// Operations (send, receive) currently using `fd`, waits included.
        var inFlight = 0
        /// close() is draining the send queue: sends are refused, receives go on.
        var closing = false
        var closed = false
        var descriptorClosed = false
    }

    private let descriptor: Mutex<DescriptorState>
    private let writeLock = AsyncLock()
    private let reactor: FDReactor
    private let onClose: (@Sendable (LinkID) -> Void)?
    private let unsentBytes: (@Sendable (Int32) -> Int)?

    /// Adopts a connected `SOCK_SEQPACKET` descriptor (made non-blocking here); the link
    /// closes it.
    /// - Parameters:
    ///   - fd: the connected socket.
    ///   - transportName: names the link in errors (`"ble link to ..."`).
    ///   - remoteAddress: reported as ``remoteAddress``.
    ///   - mtu: the largest frame to send.
    ///   - receiveMTU: the largest packet expected from the remote.
    ///   - onClose: called once, when the link closes (locally or because the remote did).
    ///   - unsentBytes: how many bytes the kernel still holds for sending; when given,
    ///     ``close()`` waits (a bounded time) for it to reach zero, because shutting an
    ///     L2CAP channel down discards what still waits for credits.
    ///   - runsOnReactor: the link asks the core to run its tasks on `reactor`'s
    ///     executor (``preferredTaskExecutor``; nil where the reactor is not one).
    package init(
        adopting fd: Int32,
        transportName: String,
        remoteAddress: String,
        mtu: Int,
        receiveMTU: Int,
        reactor: FDReactor = .shared,
        onClose: (@Sendable (LinkID) -> Void)? = nil,
        unsentBytes: (@Sendable (Int32) -> Int)? = nil,
        runsOnReactor: Bool = false
    ) throws(SystemError) {
        try Posix.setNonBlocking(fd)
        self.id = LinkID.next()
        self.transportName = transportName
        self.remoteAddress = remoteAddress
        self.mtu = mtu
        self.receiveMTU = receiveMTU
        self.descriptor = Mutex(DescriptorState(fd: fd))
        self.reactor = reactor
        self.onClose = onClose
        self.unsentBytes = unsentBytes
        self.preferredTaskExecutor = runsOnReactor ? reactor.taskExecutor : nil
    }

    deinit {
        let state = descriptor.withLock { $0 }
        if !state.descriptorClosed { _ = Glibc.close(state.fd) }
    }

    /// Sends one frame as one packet; returns when the kernel took it.
    /// - Throws: `.frameTooLarge` over ``mtu``, `.invalidArgument` for an empty frame,
    ///   `.linkClosed` after ``close()`` or a failure.
    package func send(_ frame: [UInt8]) async throws {
        guard frame.count <= mtu else {
            throw MeshError(
                .frameTooLarge,
                "frame of \(frame.count) bytes exceeds the \(transportName) link MTU of \(mtu) bytes; fragment it first"
            )
        }
        guard !frame.isEmpty else {
            throw MeshError(
                .invalidArgument,
                "an empty frame cannot be sent on a packet link (it would read as end of stream)"
            )
        }
        try await writeLock.withLock {
            guard let fd = enter(sending: true) else { throw closedError() }
            defer { leave() }
            while true {
                let result = frame.withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if result >= 0 { return }
                let code = errno
                if code == EINTR { continue }
                if isClosed { throw closedError() }
                if code == EAGAIN || code == EWOULDBLOCK {
                    try await reactor.wait(fd, for: .writable)
                    if descriptor.withLock({ $0.closing }) { throw closedError() }
                    continue
                }
                let failure = SystemError("send on \(transportName) link to \(remoteAddress)", errno: code)
                await close()
                throw MeshError(
                    .linkClosed,
                    "\(transportName) link to \(remoteAddress) failed while sending: \(failure.errnoName)",
                    cause: failure
                )
            }
        }
    }

    /// The next packet; nil once the remote closed or after ``close()``.
    /// - Throws: `.frameTooLarge` for a packet over ``receiveMTU`` (the link closes),
    ///   `.linkClosed` when the link failed.
    package func receive() async throws -> [UInt8]? {
        guard let fd = enter() else { return nil }
        defer { leave() }
        // One byte more than the MTU, so an oversized packet shows as MSG_TRUNC.
        var buffer = [UInt8](repeating: 0, count: receiveMTU + 1)
        var remoteDisconnected = false
        var sawEndOfStream = false
        while true {
            var flags: Int32 = 0
            let result = buffer.withUnsafeMutableBytes { raw -> Int in
                var vector = iovec(iov_base: raw.baseAddress, iov_len: raw.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var message = msghdr()
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    let count = recvmsg(fd, &message, Int32(MSG_DONTWAIT))
                    flags = message.msg_flags
                    return count
                }
            }
            if result > 0 {
                if result > receiveMTU || flags & Int32(MSG_TRUNC) != 0 {
                    await close()
                    throw MeshError(
                        .frameTooLarge,
                        "\(transportName) link to \(remoteAddress) received a packet over its receive MTU of \(receiveMTU) bytes; link closed"
                    )
                }
                buffer.removeSubrange(result...)
                return buffer
            }
            if result == 0 {
                // End of stream: the remote closed (or we did, which shut the socket down).
                // Bluetooth sockets answer the first read after a remote disconnect with 0
                // even when packets are still queued (the pending ECONNRESET is consumed
                // and the shut-down socket reports end of stream), so look once more.
                if !sawEndOfStream {
                    sawEndOfStream = true
                    continue
                }
                await close()
                return nil
            }
            let code = errno
            if code == EINTR { continue }
            if isClosed { return nil }
            if code == ECONNRESET && !remoteDisconnected {
                // The remote disconnected. The kernel reports that before the packets still
                // queued for us (it clears the error as it reports it): read them, then end.
                remoteDisconnected = true
                continue
            }
            if code == EAGAIN || code == EWOULDBLOCK {
                if remoteDisconnected {
                    await close()
                    return nil
                }
                try await reactor.wait(fd, for: .readable)
                continue
            }
            let failure = SystemError("recv on \(transportName) link to \(remoteAddress)", errno: code)
            await close()
            throw MeshError(
                .linkClosed,
                "\(transportName) link to \(remoteAddress) failed while receiving: \(failure.errnoName)",
                cause: failure
            )
        }
    }

    /// Lets queued packets go out (see `unsentBytes`), shuts the socket down, wakes a
    /// pending ``receive()``; idempotent.
    package func close() async {
        if let unsentBytes, let fd = beginClosing() {
            // Let the kernel hand queued packets to the controller first (bounded: at
            // most 5 s, or 1 s without progress).
            let deadline = ContinuousClock.now + .seconds(5)
            var last = Int.max
            var lastProgress = ContinuousClock.now
            while ContinuousClock.now < deadline {
                let pending = unsentBytes(fd)
                if pending <= 0 { break }
                if pending < last {
                    last = pending
                    lastProgress = .now
                } else if ContinuousClock.now - lastProgress > .seconds(1) {
                    break
                }
                await Self.pause()
            }
            leave()
        }
        let (fd, first, closeNow) = descriptor.withLock { state -> (Int32, Bool, Bool) in
            if state.closed { return (state.fd, false, false) }
            state.closed = true
            let now = state.inFlight == 0
            if now { state.descriptorClosed = true }
            return (state.fd, true, now)
        }
        guard first else { return }
        // Shutting down wakes poll (POLLHUP) and tells the remote; the descriptor itself is
        // closed by whoever leaves last, so its number is never reused under a waiter.
        _ = shutdown(fd, Posix.shutdownBoth)
        reactor.wakeAll(fd: fd)
        if closeNow { _ = Glibc.close(fd) }
        writeLock.fail(closedError())
        onClose?(id)
    }

    /// Waits 5 ms, also in a cancelled task: a transport closes its links after its
    /// `listen` was cancelled, and `Task.sleep` would return at once there (a busy loop).
    private static func pause() async {
        guard Task.isCancelled else {
            try? await Task.sleep(for: .milliseconds(5))
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5)) { continuation.resume() }
        }
    }

    private var isClosed: Bool { descriptor.withLock { $0.closed } }

    private func enter(sending: Bool = false) -> Int32? {
        descriptor.withLock { state in
            if state.closed || (sending && state.closing) { return nil }
            state.inFlight += 1
            return state.fd
        }
    }

    /// Marks the link closing (sends refused) and holds the descriptor open; nil when
    /// another close got there first.
    private func beginClosing() -> Int32? {
        descriptor.withLock { state in
            if state.closed || state.closing { return nil }
            state.closing = true
            state.inFlight += 1
            return state.fd
        }
    }

    private func leave() {
        let closeFD = descriptor.withLock { state -> Int32? in
            state.inFlight -= 1
            if state.closed && state.inFlight == 0 && !state.descriptorClosed {
                state.descriptorClosed = true
                return state.fd
            }
            return nil
        }
        if let closeFD { _ = Glibc.close(closeFD) }
    }

    private func closedError() -> MeshError {
        MeshError(.linkClosed, "\(transportName) link to \(remoteAddress) is closed")
    }
}
