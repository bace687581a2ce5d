#if canImport(CBlueZ)
import CBlueZ
#if canImport(Glibc)
import Glibc
#endif
import MeshCore
import Synchronization

/// The kernel's Bluetooth management interface (mgmt): an `HCI_CHANNEL_CONTROL`
/// socket. Advertising and discovery go through it rather than raw HCI commands: the
/// kernel owns the controller (it picks legacy or extended LE commands and runs its
/// own scans to set up connections), and raw legacy scan commands on a Bluetooth 5
/// controller break the kernel's extended-scan connection set-up (seen in the VM).
///
/// Packets: `opcode (LE16) | controller index (LE16) | length (LE16) | parameters`.
/// ``run()`` reads replies and events (the transport runs it as a child task); commands
/// wait for their reply while it runs.
final class MgmtSocket: Sendable {
    enum Opcode {
        static let readIndexList: UInt16 = 0x0003
        static let readInfo: UInt16 = 0x0004
        static let startDiscovery: UInt16 = 0x0023
        static let stopDiscovery: UInt16 = 0x0024
        static let addAdvertising: UInt16 = 0x003E
        static let removeAdvertising: UInt16 = 0x003F
        static let setDefaultSystemConfig: UInt16 = 0x004C
        static let addExtAdvParams: UInt16 = 0x0054
        static let addExtAdvData: UInt16 = 0x0055
    }

    enum EventCode {
        static let commandComplete: UInt16 = 0x0001
        static let commandStatus: UInt16 = 0x0002
        static let indexRemoved: UInt16 = 0x0005
        static let newSettings: UInt16 = 0x0006
        static let deviceFound: UInt16 = 0x0012
        static let discovering: UInt16 = 0x0013
    }

    enum Setting {
        static let powered: UInt32 = 1 << 0
        static let connectable: UInt32 = 1 << 1
        static let lowEnergy: UInt32 = 1 << 9
        static let advertising: UInt32 = 1 << 10
    }

    enum AdvertisingFlag {
        static let connectable: UInt32 = 1 << 0
        static let discoverable: UInt32 = 1 << 1
        static let intervals: UInt32 = 1 << 14
        static let txPower: UInt32 = 1 << 15
    }

    /// Discovery type: LE public + LE random.
    static let leDiscoveryType: UInt8 = (1 << 1) | (1 << 2)

    /// A reply to a command.
    struct Reply {
        var status: UInt8
        var parameters: [UInt8]
    }

    /// An unsolicited event.
    struct Event: Sendable {
        var code: UInt16
        var index: UInt16
        var parameters: [UInt8]
    }

    /// The text of an mgmt status code.
    static func statusName(_ status: UInt8) -> String {
        switch status {
        case 0x00: return "success"
        case 0x01: return "unknown command"
        case 0x03: return "failed"
        case 0x0A: return "busy"
        case 0x0B: return "rejected"
        case 0x0C: return "not supported"
        case 0x0D: return "invalid parameters"
        case 0x0E: return "disconnected"
        case 0x0F: return "not powered"
        case 0x11: return "invalid index"
        case 0x14: return "permission denied"
        default: return "status 0x\(String(status, radix: 16))"
        }
    }

    private let channel: SeqPacketLink
    private let commandLock = AsyncLock()
    private let pending = Mutex<PendingCommand?>(nil)
    /// Everything that is not a command reply.
    let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation
    /// ``run()`` returned: no reply will come any more.
    private let finished = Atomic<Bool>(false)

    /// The command in flight: its reply may come before or after the caller waits.
    private struct PendingCommand {
        var opcode: UInt16
        var index: UInt16
        var continuation: CheckedContinuation<Reply, any Error>?
        var reply: Reply?
        var failure: (any Error)?
    }

    /// Opens and binds the control channel.
    /// - Throws: ``SystemError`` (`EAFNOSUPPORT` when the kernel has no Bluetooth).
    init() throws(SystemError) {
        let fd = try Posix.call("socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)") {
            Glibc.socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
        }
        var address = sockaddr_hci()
        address.hci_family = sa_family_t(AF_BLUETOOTH)
        address.hci_dev = UInt16(HCI_DEV_NONE)
        address.hci_channel = UInt16(HCI_CHANNEL_CONTROL)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
            }
        }
        if bound != 0 {
            let code = errno
            _ = Glibc.close(fd)
            throw SystemError("bind(HCI_CHANNEL_CONTROL)", errno: code)
        }
        do {
            channel = try SeqPacketLink(
                adopting: fd,
                transportName: "mgmt",
                remoteAddress: "kernel",
                mtu: 1024,
                receiveMTU: 4096
            )
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
        (events, eventSink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// Reads replies and events until the socket closes or the task is cancelled; then
    /// finishes ``events`` and fails the command in flight.
    func run() async {
        while let packet = try? await channel.receive() {
            guard packet.count >= 6 else { continue }
            let code = UInt16(packet[0]) | UInt16(packet[1]) << 8
            let index = UInt16(packet[2]) | UInt16(packet[3]) << 8
            let parameters = Array(packet[6...])
            if code == EventCode.commandComplete || code == EventCode.commandStatus, parameters.count >= 3 {
                let opcode = UInt16(parameters[0]) | UInt16(parameters[1]) << 8
                let reply = Reply(status: parameters[2], parameters: Array(parameters[3...]))
                let waiter = pending.withLock { slot -> CheckedContinuation<Reply, any Error>? in
                    guard var current = slot, current.opcode == opcode, current.index == index, current.reply == nil
                    else { return nil }
                    if let continuation = current.continuation {
                        slot = nil
                        return continuation
                    }
                    current.reply = reply
                    slot = current
                    return nil
                }
                waiter?.resume(returning: reply)
                continue
            }
            eventSink.yield(Event(code: code, index: index, parameters: parameters))
        }
        eventSink.finish()
        finished.store(true, ordering: .sequentiallyConsistent)
        fail(MeshError(.notRunning, "the Bluetooth management socket closed"))
    }

    /// Fails the command in flight.
    private func fail(_ error: any Error) {
        let waiter = pending.withLock { slot -> CheckedContinuation<Reply, any Error>? in
            guard var current = slot else { return nil }
            if let continuation = current.continuation {
                slot = nil
                return continuation
            }
            current.failure = error
            slot = current
            return nil
        }
        waiter?.resume(throwing: error)
    }

    /// Sends one command and waits (at most 5 s) for its reply.
    func command(_ opcode: UInt16, index: UInt16, _ parameters: [UInt8] = []) async throws -> Reply {
        try await commandLock.withLock {
            let packet = Self.packet(opcode, index: index, parameters)
            pending.withLock { $0 = PendingCommand(opcode: opcode, index: index) }
            guard !finished.load(ordering: .sequentiallyConsistent) else {
                pending.withLock { $0 = nil }
                throw MeshError(.notRunning, "the Bluetooth management socket closed")
            }
            try await channel.send(packet)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await Task.sleep(for: .seconds(5))
                    self.fail(
                        MeshError(
                            .transportUnavailable,
                            "the kernel did not answer Bluetooth management command 0x\(String(opcode, radix: 16))"
                        )
                    )
                }
                defer { group.cancelAll() }
                return try await reply()
            }
        }
    }

    /// Waits for the reply of the command in flight (or its failure).
    private func reply() async throws -> Reply {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Reply, any Error>) in
            let early = pending.withLock { slot -> Result<Reply, any Error>? in
                guard var current = slot else {
                    return .failure(MeshError(.notRunning, "the Bluetooth management socket closed"))
                }
                if let reply = current.reply {
                    slot = nil
                    return .success(reply)
                }
                if let failure = current.failure {
                    slot = nil
                    return .failure(failure)
                }
                current.continuation = continuation
                slot = current
                return nil
            }
            if let early { continuation.resume(with: early) }
        }
    }

    /// Sends one command without waiting for its reply (for shutting down, when
    /// ``run()`` was already cancelled; the kernel carries the command out regardless).
    func post(_ opcode: UInt16, index: UInt16, _ parameters: [UInt8] = []) async throws {
        try await commandLock.withLock {
            try await channel.send(Self.packet(opcode, index: index, parameters))
        }
    }

    private static func packet(_ opcode: UInt16, index: UInt16, _ parameters: [UInt8]) -> [UInt8] {
        [
            UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(index & 0xFF), UInt8(index >> 8),
            UInt8(parameters.count & 0xFF), UInt8(parameters.count >> 8),
        ] + parameters
    }

    /// Closes the socket; ``run()`` returns and ``events`` finishes.
    func close() async {
        await channel.close()
    }
}

/// Little-endian helpers for mgmt parameters.
extension Array where Element == UInt8 {
    mutating func appendLE16(_ value: UInt16) {
        append(UInt8(value & 0xFF))
        append(UInt8(value >> 8))
    }

    mutating func appendLE32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    func le16(at offset: Int) -> UInt16 {
        UInt16(self[offset]) | UInt16(self[offset + 1]) << 8
    }

    func le32(at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(self[offset + $1]) << UInt32(8 * $1) }
    }
}
#endif
