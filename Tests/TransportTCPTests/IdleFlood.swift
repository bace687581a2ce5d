import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Idle TCP connections from many loopback source addresses, each re-opened as soon as
/// the server drops it: the "few hundred strangers that connect and say nothing" of
/// issue 16. Runs on its own thread (blocking `poll`), so it never occupies the Swift
/// concurrency pool the node under test runs on.
///
/// Connection `i` binds its source address to `127.1.(i / 200).(i % 200 + 1)`; Linux
/// routes all of 127/8 to `lo`, so every connection comes from a distinct IP and
/// `max_per_address` alone cannot stop them.
final class IdleFlood: Sendable {
    let port: Int
    let connections: Int
    /// Connections opened, re-opens included.
    let opened = Atomic<Int>(0)
    /// Connections the server closed (then re-opened).
    let dropped = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)

    init(port: Int, connections: Int) {
        self.port = port
        self.connections = connections
    }

    /// Opens every connection and keeps them open on a new thread.
    func start() {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        pthread_create(
            &thread,
            nil,
            { context in
                let flood = Unmanaged<IdleFlood>.fromOpaque(context!).takeRetainedValue()
                flood.run()
                return nil
            },
            context
        )
        pthread_detach(thread)
    }

    /// Closes every connection; returns once the thread ended.
    func stop() async {
        stopping.store(true, ordering: .sequentiallyConsistent)
        while !finished.load(ordering: .sequentiallyConsistent) {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    private struct Slot {
        var fd: Int32 = -1
        var connecting = false
    }

    private func run() {
        var slots = [Slot](repeating: Slot(), count: connections)
        for index in slots.indices { slots[index] = open(index) }
        var polled = [pollfd]()
        var owners = [Int]()
        while !stopping.load(ordering: .relaxed) {
            polled.removeAll(keepingCapacity: true)
            owners.removeAll(keepingCapacity: true)
            for (index, slot) in slots.enumerated() {
                guard slot.fd >= 0 else {
                    slots[index] = open(index)  // socket or bind failed last time
                    continue
                }
                polled.append(
                    pollfd(fd: slot.fd, events: Int16(POLLIN) | (slot.connecting ? Int16(POLLOUT) : 0), revents: 0)
                )
                owners.append(index)
            }
            guard poll(&polled, nfds_t(polled.count), 10) > 0 else { continue }
            for (entry, index) in zip(polled, owners) where entry.revents != 0 {
                var slot = slots[index]
                if entry.revents & Int16(POLLERR | POLLHUP) == 0 && entry.revents & Int16(POLLIN) == 0 {
                    slot.connecting = false  // writable: connected; now stay silent
                    slots[index] = slot
                    continue
                }
                var byte: UInt8 = 0
                let count = recv(slot.fd, &byte, 1, Int32(MSG_DONTWAIT))
                if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { continue }
                if count > 0 { continue }  // the server spoke; an idle stranger does not answer
                // Closed or reset by the server (or the connect failed): open it again.
                close(slot.fd)
                dropped.add(1, ordering: .relaxed)
                slots[index] = open(index)
            }
        }
        for slot in slots where slot.fd >= 0 { close(slot.fd) }
        finished.store(true, ordering: .sequentiallyConsistent)
    }

    private func open(_ index: Int) -> Slot {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return Slot() }
        var one: Int32 = 1
        // IP_BIND_ADDRESS_NO_PORT (24): the port is picked at connect, per source address.
        setsockopt(fd, Int32(IPPROTO_IP), 24, &one, socklen_t(MemoryLayout<Int32>.size))
        var source = sockaddr_in()
        source.sin_family = sa_family_t(AF_INET)
        source.sin_addr.s_addr = inet_addr("127.1.\(index / 200).\(index % 200 + 1)")
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = UInt16(port).bigEndian
        target.sin_addr.s_addr = inet_addr("127.0.0.1")
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &source) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) == 0 }
        }
        let started =
            bound
            && withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, size) == 0 || errno == EINPROGRESS
                }
            }
        guard started else {
            close(fd)
            return Slot()
        }
        opened.add(1, ordering: .relaxed)
        return Slot(fd: fd, connecting: true)
    }
}
