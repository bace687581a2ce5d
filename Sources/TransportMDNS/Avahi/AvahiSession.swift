#if canImport(CAvahi)
import CAvahi
import Synchronization

/// Owns Avahi's threaded poll and one client, with the entry group, browser and
/// resolvers made from it.
///
/// Threading: Avahi runs its own poll thread (`avahi_threaded_poll`). Its callbacks run
/// on that thread with the poll lock held; they only copy their arguments into an
/// ``AvahiEvent`` and yield it into ``events``. Every call made from another thread
/// takes the poll lock first (`withAvahiLock`), and the callbacks never take ``state``'s
/// mutex, so the lock order (mutex, then poll lock) cannot invert.
///
/// A client is replaced (``connect()``) after the daemon went away: each client gets a
/// new *generation*; events carry it so that stale ones can be dropped.
final class AvahiSession: Sendable {
    /// Events from the C callbacks. Finishes after ``shutdown()``.
    let events: AsyncStream<AvahiEvent>
    private let continuation: AsyncStream<AvahiEvent>.Continuation
    private let state: Mutex<State>

    private struct State {
        var poll: OpaquePointer?
        var pollRunning = false
        var client: OpaquePointer?
        var context: Unmanaged<AvahiCallbackContext>?
        var generation: UInt64 = 0
        var group: OpaquePointer?
        var browser: OpaquePointer?
        var resolvers: [AvahiServiceKey: OpaquePointer] = [:]
    }

    /// Creates the poll (not yet running).
    /// - Throws: ``AvahiError`` when Avahi cannot allocate its poll.
    init() throws(AvahiError) {
        guard let poll = avahi_threaded_poll_new() else {
            throw AvahiError(code: Int32(AVAHI_ERR_NO_MEMORY), operation: "avahi_threaded_poll_new")
        }
        (events, continuation) = AsyncStream.makeStream(of: AvahiEvent.self)
        state = Mutex(State(poll: poll))
    }

    deinit {
        shutdown()
    }

    /// The generation of the current client (0 before the first ``connect()``).
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Starts the poll thread.
    func startPoll() throws(AvahiError) {
        let result: Int32 = state.withLock { state in
            guard let poll = state.poll, !state.pollRunning else { return 0 }
            let rc = avahi_threaded_poll_start(poll)
            if rc >= 0 { state.pollRunning = true }
            return rc
        }
        if result < 0 { throw AvahiError(code: Int32(AVAHI_ERR_FAILURE), operation: "avahi_threaded_poll_start") }
    }

    /// Frees the current client (if any) and creates a new one in no-fail mode, which
    /// waits for a daemon instead of failing when none is on the bus.
    /// - Returns: the new generation and the client's first state.
    /// - Throws: ``AvahiError`` when no client can be made at all (no system bus).
    @discardableResult
    func connect() throws(AvahiError) -> (generation: UInt64, status: AvahiClientStatus) {
        let result: Result<(UInt64, AvahiClientStatus), AvahiError> = state.withLock { state in
            guard let poll = state.poll else {
                return .failure(AvahiError(code: Int32(AVAHI_ERR_BAD_STATE), operation: "avahi_client_new"))
            }
            avahi_threaded_poll_lock(poll)
            defer { avahi_threaded_poll_unlock(poll) }
            Self.freeClient(&state)
            state.generation += 1
            let context = Unmanaged.passRetained(
                AvahiCallbackContext(generation: state.generation, continuation: continuation)
            )
            var error: Int32 = 0
            let client = avahi_client_new(
                avahi_threaded_poll_get(poll),
                AVAHI_CLIENT_NO_FAIL,
                { client, cState, userdata in
                    guard let userdata else { return }
                    let context = Unmanaged<AvahiCallbackContext>.fromOpaque(userdata).takeUnretainedValue()
                    let error = client.map { avahi_client_errno($0) } ?? 0
                    context.continuation.yield(
                        .client(generation: context.generation, status: AvahiClientStatus(cState), error: error)
                    )
                },
                context.toOpaque(),
                &error
            )
            guard let client else {
                context.release()
                return .failure(AvahiError(code: error, operation: "avahi_client_new"))
            }
            state.client = client
            state.context = context
            return .success((state.generation, AvahiClientStatus(avahi_client_get_state(client))))
        }
        return try result.get()
    }

    /// Frees the client and everything made from it (the daemon withdraws our service).
    func disconnect() {
        withAvahiLock { state in Self.freeClient(&state) }
    }

    /// Publishes (or re-publishes) one service on each listed interface index (every
    /// interface when the list is empty), once per target protocol and port.
    /// - Returns: 0, or Avahi's negative error code (`AVAHI_ERR_COLLISION` means: pick
    ///   another name and call again).
    func publish(
        name: String,
        type: String,
        txt: [String],
        interfaces: [Int32],
        targets: [(proto: Int32, port: UInt16)]
    ) -> Int32 {
        withAvahiLock { state in
            guard let client = state.client, let context = state.context else { return Int32(AVAHI_ERR_BAD_STATE) }
            if let group = state.group {
                avahi_entry_group_reset(group)
            } else {
                guard
                    let group = avahi_entry_group_new(
                        client,
                        { group, gState, userdata in
                            guard let userdata else { return }
                            let context = Unmanaged<AvahiCallbackContext>.fromOpaque(userdata).takeUnretainedValue()
                            let client = group.flatMap { avahi_entry_group_get_client($0) }
                            let error = client.map { avahi_client_errno($0) } ?? 0
                            context.continuation.yield(
                                .group(generation: context.generation, status: AvahiGroupStatus(gState), error: error)
                            )
                        },
                        context.toOpaque()
                    )
                else { return avahi_client_errno(client) }
                state.group = group
            }
            guard let group = state.group else { return Int32(AVAHI_ERR_BAD_STATE) }
            let list = Self.makeStringList(txt)
            defer { avahi_string_list_free(list) }
            let indices = interfaces.isEmpty ? [Int32(AVAHI_IF_UNSPEC)] : interfaces
            for interface in indices {
                for target in targets {
                    let rc = avahi_entry_group_add_service_strlst(
                        group,
                        interface,
                        target.proto,
                        AvahiPublishFlags(0),
                        name,
                        type,
                        nil,
                        nil,
                        target.port,
                        list
                    )
                    if rc < 0 {
                        avahi_entry_group_reset(group)
                        return rc
                    }
                }
            }
            return avahi_entry_group_commit(group)
        }
    }

    /// Withdraws the published service (the group stays for the next ``publish``).
    func withdraw() {
        withAvahiLock { state in
            if let group = state.group { avahi_entry_group_reset(group) }
        }
    }

    /// Starts browsing for a service type on every interface and protocol (once per client).
    /// - Returns: 0 or Avahi's negative error code.
    func browse(type: String) -> Int32 {
        withAvahiLock { state in
            guard let client = state.client, let context = state.context else { return Int32(AVAHI_ERR_BAD_STATE) }
            if state.browser != nil { return 0 }
            let browser = avahi_service_browser_new(
                client,
                AvahiIfIndex(AVAHI_IF_UNSPEC),
                AvahiProtocol(AVAHI_PROTO_UNSPEC),
                type,
                nil,
                AvahiLookupFlags(0),
                { _, interface, proto, event, name, type, domain, flags, userdata in
                    guard let userdata else { return }
                    let context = Unmanaged<AvahiCallbackContext>.fromOpaque(userdata).takeUnretainedValue()
                    let generation = context.generation
                    switch event {
                    case AVAHI_BROWSER_NEW, AVAHI_BROWSER_REMOVE:
                        guard let name, let type, let domain else { return }
                        let key = AvahiServiceKey(
                            interface: interface,
                            proto: proto,
                            name: String(cString: name),
                            type: String(cString: type),
                            domain: String(cString: domain)
                        )
                        if event == AVAHI_BROWSER_NEW {
                            let own = flags.rawValue & AVAHI_LOOKUP_RESULT_OUR_OWN.rawValue != 0
                            context.continuation.yield(.browseNew(generation: generation, key: key, ownService: own))
                        } else {
                            context.continuation.yield(.browseRemove(generation: generation, key: key))
                        }
                    case AVAHI_BROWSER_FAILURE:
                        context.continuation.yield(
                            .browseFailure(generation: generation, error: Int32(AVAHI_ERR_FAILURE))
                        )
                    default:
                        break
                    }
                },
                context.toOpaque()
            )
            guard let browser else { return avahi_client_errno(client) }
            state.browser = browser
            return 0
        }
    }

    /// Stops browsing: frees the browser (a later ``browse(type:)`` makes a new one,
    /// which reports every service on the network again).
    func stopBrowsing() {
        withAvahiLock { state in
            if let browser = state.browser { avahi_service_browser_free(browser) }
            state.browser = nil
        }
    }

    /// Starts resolving one browsed service (no-op when a resolver for it is pending).
    /// - Returns: 0 or Avahi's negative error code.
    func resolve(_ key: AvahiServiceKey) -> Int32 {
        withAvahiLock { state in
            guard let client = state.client, let context = state.context else { return Int32(AVAHI_ERR_BAD_STATE) }
            if state.resolvers[key] != nil { return 0 }
            let resolver = avahi_service_resolver_new(
                client,
                key.interface,
                key.proto,
                key.name,
                key.type,
                key.domain,
                key.proto,
                AvahiLookupFlags(0),
                { _, interface, proto, event, name, type, domain, host, address, port, txt, flags, userdata in
                    guard let userdata, let name, let type, let domain else { return }
                    let context = Unmanaged<AvahiCallbackContext>.fromOpaque(userdata).takeUnretainedValue()
                    let key = AvahiServiceKey(
                        interface: interface,
                        proto: proto,
                        name: String(cString: name),
                        type: String(cString: type),
                        domain: String(cString: domain)
                    )
                    guard event == AVAHI_RESOLVER_FOUND, let address else {
                        context.continuation.yield(
                            .resolveFailure(generation: context.generation, key: key, error: Int32(AVAHI_ERR_TIMEOUT))
                        )
                        return
                    }
                    let service = AvahiResolvedService(
                        key: key,
                        hostName: host.map { String(cString: $0) } ?? "",
                        address: AvahiSession.format(address),
                        isIPv6: address.pointee.proto == AvahiProtocol(AVAHI_PROTO_INET6),
                        port: port,
                        txt: AvahiSession.strings(txt),
                        isLocal: flags.rawValue & AVAHI_LOOKUP_RESULT_LOCAL.rawValue != 0
                    )
                    context.continuation.yield(.resolved(generation: context.generation, service: service))
                },
                context.toOpaque()
            )
            guard let resolver else { return avahi_client_errno(client) }
            state.resolvers[key] = resolver
            return 0
        }
    }

    /// Frees the resolver for a key, if any.
    func cancelResolve(_ key: AvahiServiceKey) {
        withAvahiLock { state in
            if let resolver = state.resolvers.removeValue(forKey: key) { avahi_service_resolver_free(resolver) }
        }
    }

    /// Stops the poll thread, frees every handle and finishes ``events``. Idempotent.
    func shutdown() {
        state.withLock { state in
            guard let poll = state.poll else { return }
            // Stop the thread first (without the poll lock: stop joins it), then free.
            if state.pollRunning { avahi_threaded_poll_stop(poll) }
            state.pollRunning = false
            Self.freeClient(&state)
            avahi_threaded_poll_free(poll)
            state.poll = nil
        }
        continuation.finish()
    }

    /// Runs `body` with the mutex and the poll lock held. Never call from a callback.
    /// After ``shutdown()`` there is no poll thread and no client, so `body` runs unlocked.
    private func withAvahiLock<T: Sendable>(_ body: (inout State) -> T) -> T {
        state.withLock { state in
            guard let poll = state.poll else { return body(&state) }
            avahi_threaded_poll_lock(poll)
            defer { avahi_threaded_poll_unlock(poll) }
            return body(&state)
        }
    }

    /// Frees the client and its objects; the caller holds the poll lock or stopped the poll.
    private static func freeClient(_ state: inout State) {
        state.resolvers.removeAll()
        state.browser = nil
        state.group = nil
        if let client = state.client {
            // Frees every browser, resolver and entry group made from it.
            avahi_client_free(client)
            state.client = nil
        }
        state.context?.release()
        state.context = nil
    }

    private static func makeStringList(_ strings: [String]) -> UnsafeMutablePointer<AvahiStringList>? {
        var list: UnsafeMutablePointer<AvahiStringList>? = nil
        // avahi_string_list_add prepends: add in reverse to keep the order.
        for string in strings.reversed() {
            list = avahi_string_list_add(list, string)
        }
        return list
    }

    fileprivate static func strings(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [String] {
        var result: [String] = []
        var item = list
        while let current = item {
            if let text = avahi_string_list_get_text(current) {
                let size = avahi_string_list_get_size(current)
                result.append(String(decoding: UnsafeBufferPointer(start: text, count: size), as: UTF8.self))
            }
            item = avahi_string_list_get_next(current)
        }
        return result
    }

    fileprivate static func format(_ address: UnsafePointer<AvahiAddress>) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        return buffer.withUnsafeMutableBufferPointer { buffer in
            guard avahi_address_snprint(buffer.baseAddress, buffer.count, address) != nil else { return "" }
            return String(cString: buffer.baseAddress!)
        }
    }
}

#endif
