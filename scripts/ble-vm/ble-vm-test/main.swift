// ble-vm-test: drives BLETransport on a real kernel Bluetooth stack (scripts/ble-vm/run.sh).
//
//   ble-vm-test accept --adapter hci0 [--psm 0x81]   advertise, discover the peer, accept one
//                                                    link, echo every packet, check the large message
//   ble-vm-test dial --adapter hci1                  advertise, discover the peer, dial it, send frames
//                                                    of many sizes + a message of several MTUs, check echoes
//   ble-vm-test bench --adapter hci1 --rtt N --bulk BYTES   dial an `echo` peer and measure
//   ble-vm-test echo --adapter hci0                  accept links until killed, echo every packet
//   (bench, echo: --executor main|pool|reactor runs the link loops on the main actor, the global
//    pool or BLETransport.linkExecutor)
//   ble-vm-test move --adapter hci1 --data-path gatt_first --move-after S --seconds T
//                                                    dial an `echo` peer over GATT, stream numbered frames
//                                                    for T s while the link moves to L2CAP after S s;
//                                                    every echo must come back once, in order
//   ble-vm-test node-echo | node-bench ...          two routers with a node's stack over BLE (NodeBench.swift)
//   ble-vm-test conformance --dead ADDRESS           TransportConformance with A on hci0, B on hci1, then
//                                                    cancelling B's listen closes its listener and links
//
// Prints "ble-vm-test[hciN]: ..." lines; exits 0 on success, 1 on failure.
import Logging
import MeshCore
import MeshTesting
import TransportBLE

#if canImport(Glibc)
import Glibc
#endif

let programStart = ContinuousClock.now

func say(_ text: String) {
    print("ble-vm-test[\(options.adapter)] +\(ms(programStart.duration(to: .now))) ms: \(text)")
    fflush(nil)
}

func fatal(_ text: String) -> Never {
    print("ble-vm-test: FAIL \(text)")
    fflush(nil)
    exit(1)
}

let options = Options(CommandLine.arguments)
guard ["accept", "dial", "bench", "echo", "conformance", "move", "node-echo", "node-bench"].contains(options.mode) else {
    fatal("usage: ble-vm-test accept|dial|bench|echo --adapter hciN [--psm 0x81] [--security low|medium|high] [--rtt N] [--bulk BYTES] [--rounds N] [--data-path auto|l2cap|gatt|gatt_first] [--executor main|pool|reactor] [--gatt-window N]")
}

/// Runs `body` with a deadline.
func withDeadline<T: Sendable>(_ seconds: Int, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            // Some waits (an event that never comes) cannot be cancelled: end the process.
            fatal("\(what): nothing after \(seconds) s")
        }
        let first = try await group.next()!
        group.cancelAll()
        guard let first else { throw MeshError(.ackTimeout, "\(what): nothing after \(seconds) s") }
        return first
    }
}

/// The frames the dialler sends: many sizes up to the MTU, then the packets of one message
/// of several MTUs, framed the way the core fragments.
func testFrames(mtu: Int) throws -> (frames: [[UInt8]], message: [UInt8]) {
    var frames: [[UInt8]] = []
    for size in [1, 2, 17, 100, mtu / 2, mtu - 1, mtu] {
        frames.append((0..<size).map { UInt8(truncatingIfNeeded: $0 &+ size) })
    }
    let message = (0..<(3 * mtu + 17)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    frames += try PacketFramer.packets(for: message, mtu: mtu)
    return (frames, message)
}

if options.mode == "conformance" {
    let base = options
    let harness = TransportConformance.Harness(
        makeTransport: { index in
            var configuration = BLETransport.Configuration()
            configuration.adapter = index == 0 ? "hci0" : "hci1"
            configuration.psm = base.psm
            configuration.advertisingIntervalMs = 30
            configuration.scanIntervalMs = 30
            configuration.scanWindowMs = 30
            return BLETransport(configuration: configuration)
        },
        hint: { transport, _ in
            guard let ble = transport as? BLETransport, let address = ble.localAddress else {
                throw MeshError(.notRunning, "side B has no address")
            }
            return PeerHint(transport: "ble", address: address.description)
        },
        deadHint: PeerHint(transport: "ble", address: base.dead),
        checkTimeout: .seconds(90),
        backPressureLimitBytes: 256 * 1024)
    let start = ContinuousClock.now
    do {
        try await TransportConformance.run(harness)
    } catch {
        fatal("TransportConformance: \(error)")
    }
    print("ble-vm-test: TransportConformance passed (\(TransportConformance.checkNames.count) checks: \(TransportConformance.checkNames.joined(separator: ", "))) in \(start.duration(to: .now))")
    do {
        let dead = options.dead
        try await withDeadline(90, "the cancellation check") { try await CancellationCheck.run(harness, dead: dead) }
    } catch {
        fatal("cancellation check: \(error)")
    }
    print("ble-vm-test: cancelling listen closed the listener and both ends of a link; .listening carried the local address")
    exit(0)
}

enum CancellationCheck {
    /// B's `.listening` names its address; after B's listen is cancelled, a link A had
    /// opened to it ends at both ends and dialling B fails.
    static func run(_ harness: TransportConformance.Harness, dead: String) async throws {
        var quiet = Logger(label: "ble")
        quiet.logLevel = .warning
        let a = try await RunningTransport.start(try await harness.makeTransport(0), logger: quiet)
        let bTransport = try await harness.makeTransport(1)
        let b = try await RunningTransport.start(bTransport, logger: quiet)
        let hint = try await harness.hint(bTransport, 1)
        guard b.addresses == [hint.address] else {
            throw MeshError(.invalidArgument, ".listening said \(b.addresses), the transport's address is \(hint.address)")
        }
        let accepted = Task { () -> (any Link)? in
            for await event in b.events { if case .inboundLink(let link) = event { return link } }
            return nil
        }
        let link = try await a.transport.dial(hint)
        guard let remote = await accepted.value else { throw MeshError(.linkClosed, "B reported no inbound link") }
        try await link.send([1, 2, 3])
        guard try await remote.receive() == [1, 2, 3] else { throw MeshError(.malformedFrame, "the frame did not arrive") }
        await b.stop()
        guard try await remote.receive() == nil else { throw MeshError(.invalidArgument, "B's end still delivers after listen returned") }
        guard (try? await link.receive()) == nil else { throw MeshError(.invalidArgument, "A's end still delivers after B's listen returned") }
        do {
            let again = try await a.transport.dial(hint)
            await again.close()
            throw MeshError(.invalidArgument, "dialling B after its listen returned opened a link")
        } catch let error as MeshError where error.code == .dialFailed {}
        do {
            _ = try await bTransport.dial(PeerHint(transport: "ble", address: dead))
            throw MeshError(.invalidArgument, "B dialled after its listen returned")
        } catch let error as MeshError where error.code == .notRunning {}
        await a.stop()
    }
}

if options.mode.hasPrefix("node-") { await NodeBench.run(options) }
var logger = Logger(label: "ble")
logger.logLevel = .info
let me = PeerID.random()
var configuration = BLETransport.Configuration()
configuration.adapter = options.adapter
configuration.psm = options.psm
configuration.securityLevel = BLETransport.Configuration.SecurityLevel(rawValue: options.security) ?? .low
guard let dataPath = BLETransport.Configuration.DataPath(rawValue: options.dataPath) else { fatal("--data-path \(options.dataPath): expected auto, l2cap, gatt or gatt_first") }
configuration.dataPath = dataPath
configuration.moveToL2CAPAfterSeconds = options.moveAfter
configuration.gattWriteWindow = options.gattWindow
configuration.advertisingIntervalMs = 30
configuration.scanIntervalMs = 30
configuration.scanWindowMs = 30
if options.mode == "dial" { configuration.txPower = -4 }  // exercises the TX power path
let transport = BLETransport(configuration: configuration)
let started = ContinuousClock.now

let running: RunningTransport
do {
    running = try await RunningTransport.start(transport, localPeerID: me, logger: logger)
} catch {
    fatal("listen on \(options.adapter): \(error)")
}
guard running.addresses == [transport.localAddress!.description] else {
    fatal(".listening said \(running.addresses), the transport's address is \(transport.localAddress!)")
}
say("started: listening on \(running.addresses[0]), advertising service \(BLEMeshAdvertisement.serviceUUIDString)")

/// A counting semaphore: frames in flight in `move`.
actor Window {
    var permits: Int
    var waiters: [CheckedContinuation<Void, Never>] = []
    init(permits: Int) { self.permits = permits }
    func wait() async {
        if permits > 0 {
            permits -= 1
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }
    func signal() {
        if waiters.isEmpty { permits += 1 } else { waiters.removeFirst().resume() }
    }
}

/// Sorts the transport's events: the first discovered hint and the inbound links.
actor EventSorter {
    var hint: PeerHint?
    var inbound: [any Link] = []
    var hintWaiters: [CheckedContinuation<PeerHint, Never>] = []
    var linkWaiters: [CheckedContinuation<any Link, Never>] = []

    func discovered(_ hint: PeerHint) {
        if self.hint == nil {
            self.hint = hint
            for waiter in hintWaiters { waiter.resume(returning: hint) }
            hintWaiters = []
        }
    }

    func accepted(_ link: any Link) {
        if let waiter = linkWaiters.first {
            linkWaiters.removeFirst()
            waiter.resume(returning: link)
        } else {
            inbound.append(link)
        }
    }

    func nextHint() async -> PeerHint {
        if let hint { return hint }
        return await withCheckedContinuation { hintWaiters.append($0) }
    }

    func nextLink() async -> any Link {
        if !inbound.isEmpty { return inbound.removeFirst() }
        return await withCheckedContinuation { linkWaiters.append($0) }
    }
}

let sorter = EventSorter()
let eventTask = Task {
    for await event in running.events {
        switch event {
        case .peerDiscovered(let hint): await sorter.discovered(hint)
        case .inboundLink(let link): await sorter.accepted(link)
        case .peerLost, .listening: break
        }
    }
}

if options.mode == "echo" {
    say("echo: serving links on \(transport.localAddress!)")
    while true {
        let link = await sorter.nextLink()
        switch options.executor {
        case "main": Task { try await echoLoop(link) }
        case "pool": Task.detached { try await echoLoop(link) }
        default: Task.detached(executorPreference: BLETransport.linkExecutor) { try await echoLoop(link) }
        }
    }
}

do {
    let hint = try await withDeadline(options.timeout, "discovery") { await sorter.nextHint() }
    say("discovered \(hint.transport)://\(hint.address) ephemeral_id=\(hint.metadata["ephemeral_id"] ?? "?") rssi=\(hint.metadata["rssi"] ?? "?") after \(started.duration(to: .now))")

    switch options.mode {
    case "accept":
        let link = try await withDeadline(options.timeout, "inbound link") { await sorter.nextLink() }
        say("accepted LE channel from \(link.remoteAddress): mtu=\(link.mtu)")
        var reassembler = PacketReassembler()
        var echoed = 0
        var bytes = 0
        while let packet = try await link.receive() {
            try await link.send(packet)
            echoed += 1
            bytes += packet.count
            if packet.first.map({ [0x80, 0x00, 0x40, 0xC0].contains($0) }) == true,
                case .segment(let message)? = try? reassembler.feed(packet)
            {
                say("reassembled a \(message.count)-byte message (\(message.count / link.mtu + 1) packets) from the dialler")
            }
        }
        say("link closed by the dialler after \(echoed) echoed packets (\(bytes) bytes each way)")
        if options.mode == "accept" && echoed == 0 { fatal("no packet arrived") }
    case "dial":
        let link = try await withDeadline(options.timeout, "dial") { try await transport.dial(hint) }
        say("opened LE channel to \(link.remoteAddress): mtu=\(link.mtu)")
        let (frames, message) = try testFrames(mtu: link.mtu)
        var reassembler = PacketReassembler()
        var echoedMessage: [UInt8]?
        for frame in frames {
            try await link.send(frame)
            guard let echo = try await link.receive() else { fatal("link closed before the echo of a \(frame.count)-byte frame") }
            guard echo == frame else { fatal("echo of a \(frame.count)-byte frame differs (\(echo.count) bytes back)") }
            if case .segment(let whole)? = try? reassembler.feed(echo), whole.count > link.mtu { echoedMessage = whole }
        }
        say("sent and got back \(frames.count) frames of 1..\(link.mtu) bytes, boundaries kept")
        guard echoedMessage == message else { fatal("the \(message.count)-byte message did not come back whole") }
        say("a \(message.count)-byte message (\(mtuMultiple(message.count, link.mtu))) crossed both ways in MTU-sized packets")
        do {
            try await link.send([UInt8](repeating: 0, count: link.mtu + 1))
            fatal("a frame over the MTU was accepted")
        } catch let error as MeshError where error.code == .frameTooLarge {
            say("a frame of mtu+1 bytes is refused: \(error.message)")
        }
        await link.close()
        say("closed the link")
    case "move":
        let link = try await withDeadline(options.timeout, "dial") { try await transport.dial(hint) }
        say("move: link to \(link.remoteAddress), mtu=\(link.mtu); streaming numbered frames for \(options.seconds) s")
        // Up to 8 frames in flight; the echoes must come back as 0, 1, 2, ... with none
        // missing or repeated, across the move.
        let window = Window(permits: 8)
        let deadline = ContinuousClock.now + .milliseconds(Int(options.seconds * 1000))
        async let checked: Int = {
            var expected: UInt32 = 0
            while let echo = try await link.receive() {
                guard echo.count >= 4 else { fatal("move: short echo of \(echo.count) bytes") }
                let number = echo[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                if number == UInt32.max { return Int(expected) }
                guard number == expected else { fatal("move: echo \(number) came where \(expected) was due (lost, repeated or reordered)") }
                guard echo.count == 4 + Int(number % 100) else { fatal("move: echo \(number) has \(echo.count) bytes") }
                expected += 1
                await window.signal()
            }
            fatal("move: link closed after \(expected) echoes")
        }()
        var sent: UInt32 = 0
        while ContinuousClock.now < deadline {
            await window.wait()
            let header = withUnsafeBytes(of: sent.bigEndian) { Array($0) }
            try await link.send(header + Array(repeating: UInt8(truncatingIfNeeded: sent), count: Int(sent % 100)))
            sent += 1
        }
        try await link.send([0xFF, 0xFF, 0xFF, 0xFF])
        let echoed = try await checked
        guard echoed == Int(sent) else { fatal("move: \(echoed) of \(sent) frames echoed") }
        say("move: done, \(sent) frames echoed once each, in order")
        await link.close()
    case "bench":
        let link = try await withDeadline(options.timeout, "dial") { try await transport.dial(hint) }
        say("bench: channel to \(link.remoteAddress), mtu=\(link.mtu)")
        switch options.executor {
        case "main": try await benchLoop(link)
        case "pool": try await Task.detached { try await benchLoop(link) }.value
        default: try await Task.detached(executorPreference: BLETransport.linkExecutor) { try await benchLoop(link) }.value
        }
        await link.close()
    default:
        break
    }
} catch {
    fatal("\(options.mode) on \(options.adapter): \(error)")
}

say("stopping the transport")
await running.stop()
eventTask.cancel()
do {
    _ = try await transport.dial(PeerHint(transport: "ble", address: options.dead))
    fatal("dial worked after listen returned")
} catch let error as MeshError where error.code == .notRunning {
    say("listen returned: dial says \(error.message)")
}
say("PASS \(options.mode) in \(started.duration(to: .now))")
