/// The files `new-transport` writes, as text with `__Name__` (the type prefix),
/// `__name__` (the config key) and `__Module__` (the module) filled in.
///
/// The plugin cannot depend on other targets, so the templates live here. They are
/// shaped after TransportTCP; keep them compiling with zero warnings (the plugin's end
/// to end test, scripts/test-plugin.sh, builds the generated module).
struct Templates {
    let name: TransportName

    private func fill(_ template: String) -> String {
        template
            .replacingOccurrences(of: "__Module__", with: name.module)
            .replacingOccurrences(of: "__Name__", with: name.type)
            .replacingOccurrences(of: "__name__", with: name.key)
    }

    /// The product line for Package.swift.
    var productEntry: String {
        fill(#".library(name: "__Module__", targets: ["__Module__"]),"#)
    }

    /// The target and test target for Package.swift.
    var targetEntries: String {
        fill(
            #"""
            .target(
                name: "__Module__",
                dependencies: ["MeshCore", .product(name: "Logging", package: "swift-log")]
            ),
            .testTarget(name: "__Module__Tests", dependencies: ["__Module__", "MeshCore", "MeshTesting"]),
            """#)
    }

    var transport: String {
        fill(
            #"""
            import Logging
            import MeshCore
            import Synchronization

            /// Moves SCMesh frames over __Name__.
            ///
            /// TODO: say what the medium is, what an address looks like (the text of
            /// `PeerHint.address`, e.g. "/dev/ttyUSB0" or "AA:BB:CC:DD:EE:FF/0x81") and what
            /// limits the link MTU.
            ///
            /// The router does everything above moving frames: the Noise XX handshake on every
            /// link, fragmentation to ``TransportCapabilities/maxFrameSize``, hop acks,
            /// routing, escalation between transports, keepalive, and redialling with
            /// backoff every hint this transport reports. This type only:
            /// - accepts links from remotes and reports each as `.inboundLink` on ``events``;
            /// - reports where peers may be (`.peerDiscovered` / `.peerLost` hints);
            /// - opens links to hints in ``dial(_:)``.
            ///
            /// ## Contract (`MeshCore.Transport`)
            /// - ``start(context:)`` is called exactly once, before anything but ``name``,
            ///   ``capabilities`` and ``events``. When the medium is missing here it throws
            ///   `MeshError(.transportUnavailable, "<one line why>")`; the node logs it and
            ///   runs its other transports.
            /// - ``events`` has one consumer (the router) and finishes after ``stop()``.
            /// - ``dial(_:)`` opens one new link or throws `.dialFailed`; it may be called
            ///   concurrently and must not block other calls.
            /// - ``stop()`` closes the listener and every link this transport made, then
            ///   finishes ``events``. It is idempotent.
            ///
            /// ```swift
            /// let transport = __Name__Transport(configuration: .init(listen: "..."))
            /// try await transport.start(context: TransportContext(localPeerID: me, logger: logger))
            /// let link = try await transport.dial(PeerHint(transport: "__name__", address: "..."))
            /// ```
            public final class __Name__Transport: Transport {
                /// The transport's name: its key under `transports:` in the node config.
                public let name: String
                /// The configuration this transport was made with.
                public let configuration: Configuration
                /// What the medium can do; the routing policy ranks links by it.
                public let capabilities: TransportCapabilities
                /// Discovered and lost hints and inbound links. Finishes after ``stop()``.
                public let events: AsyncStream<TransportEvent>

                private let eventSink: AsyncStream<TransportEvent>.Continuation
                private let state = Mutex(State())

                private enum Phase {
                    case idle
                    case running
                    case stopped
                }

                private struct State {
                    var phase = Phase.idle
                    var logger = Logger(label: "scmesh.transport.__name__")
                    /// Every link not yet closed, so ``stop()`` can close them.
                    var links: [LinkID: __Name__Link] = [:]
                    // TODO: the listener / device handle, if the medium has one.
                }

                /// Creates a stopped transport.
                /// - Parameters:
                ///   - configuration: the `transports.__name__` settings; checked by ``start(context:)``.
                ///   - name: the name reported by ``name``, hints and links; default `"__name__"`.
                public init(configuration: Configuration = Configuration(), name: String = "__name__") {
                    self.name = name
                    self.configuration = configuration
                    // TODO: describe the medium. The policy ranks a transport that cannot move a
                    // payload within the longest ack timeout at `nominalBitrate` after those that
                    // can; priority (from the config) comes next, then measured RTT.
                    self.capabilities = TransportCapabilities(
                        maxFrameSize: configuration.mtu,
                        nominalBitrate: configuration.bitrate,
                        isReliable: true,
                        needsDiscovery: false,
                        powerCost: 0
                    )
                    (events, eventSink) = AsyncStream.makeStream(
                        of: TransportEvent.self, bufferingPolicy: .bufferingOldest(256))
                }

                /// Where a started transport can be dialled: its ``Configuration/listen`` address.
                public var localHint: PeerHint {
                    PeerHint(transport: name, address: configuration.listen)
                }

                /// Opens the medium, starts accepting links and reports the configured peers.
                /// - Throws: `MeshError` `.invalidConfiguration` for bad settings;
                ///   `.transportUnavailable` (one line) when the medium cannot be used here;
                ///   `.invalidArgument` when called twice.
                public func start(context: TransportContext) async throws {
                    try configuration.validate()
                    try state.withLock { state in
                        guard state.phase == .idle else {
                            throw MeshError(
                                .invalidArgument, "__Name__ transport was already started; make a new one to start again")
                        }
                        state.phase = .running
                        state.logger = context.logger
                    }
                    // TODO: open the medium and listen at `configuration.listen` (skip when it is
                    // empty: a dial-only node). For each remote that connects, wrap the connection
                    // in a __Name__Link and call `accept(_:)`. When the medium is missing here:
                    //   throw MeshError(.transportUnavailable, "__name__: <why, in one line>")
                    for peer in configuration.peers {
                        eventSink.yield(.peerDiscovered(PeerHint(transport: name, address: peer)))
                    }
                }

                /// Opens a link to `hint.address`.
                /// - Throws: `MeshError` `.dialFailed` when nothing answers there; `.notRunning`
                ///   before ``start(context:)`` or after ``stop()``.
                public func dial(_ hint: PeerHint) async throws -> any Link {
                    guard state.withLock({ $0.phase == .running }) else {
                        throw MeshError(.notRunning, "__Name__ transport is not running; start it before dialling \(hint.address)")
                    }
                    // TODO: connect to `hint.address`, wrap the connection in a link,
                    //   let link = __Name__Link(transportName: name, remoteAddress: hint.address,
                    //       mtu: configuration.mtu, onClose: { [weak self] in self?.forget($0) })
                    // then `try register(link)` (close it if that throws) and return it. When nothing answers:
                    //   throw MeshError(.dialFailed, "could not reach __name__://\(hint.address): <why>")
                    throw MeshError(.dialFailed, "TODO: implement dial in Sources/__Module__/__Name__Transport.swift")
                }

                /// Hands a link a remote opened to the router. Call it from the accept loop.
                func accept(_ link: __Name__Link) async {
                    do {
                        try register(link)
                    } catch {
                        await link.close()
                        return
                    }
                    if case .enqueued = eventSink.yield(.inboundLink(link)) { return }
                    await link.close()  // the router is not taking events (stopped)
                }

                /// Remembers a link so ``stop()`` closes it.
                /// - Throws: `.notRunning` when the transport stopped meanwhile.
                func register(_ link: __Name__Link) throws {
                    try state.withLock { state in
                        guard state.phase == .running else {
                            throw MeshError(.notRunning, "__Name__ transport stopped")
                        }
                        state.links[link.id] = link
                    }
                }

                /// Forgets a link; each link calls it when it closes.
                func forget(_ id: LinkID) {
                    _ = state.withLock { $0.links.removeValue(forKey: id) }
                }

                /// Closes the listener and every link, then finishes ``events``. Idempotent.
                public func stop() async {
                    let links = state.withLock { state in
                        state.phase = .stopped
                        defer { state.links = [:] }
                        return Array(state.links.values)
                    }
                    // TODO: close the listener / release the medium.
                    for link in links {
                        await link.close()
                    }
                    eventSink.finish()
                }
            }

            """#)
    }

    var link: String {
        fill(
            #"""
            import MeshCore
            import Synchronization

            /// One ordered, duplex pipe of frames to one remote over __Name__.
            ///
            /// ## Contract (`MeshCore.Link`)
            /// - Frames keep their boundaries: one ``send(_:)`` here is one ``receive()`` there.
            ///   On a byte stream, put a length prefix before each frame (TransportTCP uses 2
            ///   bytes big-endian); on a packet medium, send one frame per packet.
            /// - ``send(_:)`` suspends until the medium accepted the frame (back-pressure:
            ///   nothing queues without bound). One caller at a time. A frame over ``mtu``
            ///   throws `.frameTooLarge`; after ``close()`` or a failure it throws `.linkClosed`.
            /// - ``receive()`` returns frames in order, `nil` once the remote closed cleanly or
            ///   after ``close()``, and throws when the link failed. One caller at a time. Never
            ///   hand up a frame over ``mtu`` (a remote that sends one is broken: fail the link).
            /// - ``close()`` is idempotent, wakes a pending ``receive()`` (which returns `nil`)
            ///   and makes the remote's ``receive()`` return `nil` soon after.
            public final class __Name__Link: Link {
                /// A process-unique identifier.
                public let id = LinkID.next()
                /// Name of the transport that made this link.
                public let transportName: String
                /// The remote's address, in the transport's notation.
                public let remoteAddress: String
                /// Largest frame ``send(_:)`` accepts.
                public let mtu: Int

                private let onClose: @Sendable (LinkID) -> Void
                private let state = Mutex(State())

                private struct State {
                    var closed = false
                    var stats = LinkStats()
                    // TODO: the connection handle (file descriptor, channel, ...).
                }

                /// Wraps one connection. `onClose` runs once, when the link closes (the
                /// transport forgets it then).
                /// TODO: take the connection handle.
                init(transportName: String, remoteAddress: String, mtu: Int, onClose: @escaping @Sendable (LinkID) -> Void) {
                    self.transportName = transportName
                    self.remoteAddress = remoteAddress
                    self.mtu = mtu
                    self.onClose = onClose
                }

                /// Frames and bytes moved so far.
                public var stats: LinkStats { state.withLock { $0.stats } }

                /// Sends one frame, suspending while the medium applies back-pressure.
                /// - Throws: `MeshError` `.frameTooLarge` over ``mtu``; `.linkClosed` after
                ///   ``close()`` or when the connection failed.
                public func send(_ frame: [UInt8]) async throws {
                    guard frame.count <= mtu else {
                        throw MeshError(.frameTooLarge, "frame of \(frame.count) bytes exceeds the __name__ link MTU \(mtu)")
                    }
                    guard !state.withLock({ $0.closed }) else {
                        throw MeshError(.linkClosed, "__name__ link to \(remoteAddress) is closed")
                    }
                    // TODO: write the frame as one unit and return once the medium took it;
                    // wait (without blocking a thread) while it is full. Then:
                    //   state.withLock { $0.stats.recordSent(frame.count) }
                    throw MeshError(.linkClosed, "TODO: implement send in Sources/__Module__/__Name__Link.swift")
                }

                /// The next frame, or `nil` at the end of the stream.
                /// - Throws: `MeshError` when the link failed (`.malformedFrame` for input that
                ///   breaks the framing, `.linkClosed` for a broken connection).
                public func receive() async throws -> [UInt8]? {
                    if state.withLock({ $0.closed }) { return nil }
                    // TODO: wait (without blocking a thread) for the next whole frame and return
                    // it; return nil when the remote closed or close() was called meanwhile. Then:
                    //   state.withLock { $0.stats.recordReceived(frame.count) }
                    throw MeshError(.linkClosed, "TODO: implement receive in Sources/__Module__/__Name__Link.swift")
                }

                /// Closes the link. Idempotent.
                public func close() async {
                    let first = state.withLock { state in
                        defer { state.closed = true }
                        return !state.closed
                    }
                    guard first else { return }
                    // TODO: shut the connection down so a pending receive() here wakes up and
                    // the remote's receive() returns nil, then release the handle.
                    onClose(id)
                }
            }

            """#)
    }

    var configuration: String {
        fill(
            #"""
            import MeshCore

            extension __Name__Transport {
                /// The settings of one __Name__ transport: the `transports.__name__` section of a
                /// node's config, without the node's own `enabled` and `priority` keys.
                ///
                /// Every key has a default, so an empty section is valid. Keys are snake_case in
                /// files; the node rejects keys this type does not decode.
                ///
                /// ```yaml
                /// transports:
                ///   __name__:
                ///     enabled: true
                ///     priority: 40
                ///     listen: ""
                ///     peers: []
                ///     mtu: 1024
                ///     bitrate: 1000000
                /// ```
                /// TODO: replace the example keys with the medium's own (a device path, a baud
                /// rate, a channel...), keeping each documented with its key, default and range.
                public struct Configuration: Codable, Sendable, Equatable {
                    /// Where this transport accepts links, in the medium's notation; empty for a
                    /// dial-only node. Key `listen`; default `""`.
                    public var listen: String
                    /// Addresses to report as discovered hints at start; the router dials them and
                    /// redials with backoff. Key `peers`; default `[]`.
                    public var peers: [String]
                    /// Largest frame a link carries, so the link MTU; the core fragments larger
                    /// messages. Must be 4...65535. Key `mtu`; default 1024.
                    public var mtu: Int
                    /// Nominal throughput of the medium in bit/s, read by the routing policy (a
                    /// slow medium ranks last for large payloads). Must be at least 1. Key
                    /// `bitrate`; default 1000000.
                    public var bitrate: Int

                    /// The defaults. (The node's `TransportConfiguration` asks for a plain `init()`.)
                    public init() {
                        self.init(listen: "")
                    }

                    /// Creates a configuration; every parameter has the documented default.
                    public init(listen: String = "", peers: [String] = [], mtu: Int = 1024, bitrate: Int = 1_000_000) {
                        self.listen = listen
                        self.peers = peers
                        self.mtu = mtu
                        self.bitrate = bitrate
                    }

                    enum CodingKeys: String, CodingKey {
                        case listen
                        case peers
                        case mtu
                        case bitrate
                    }

                    /// Decodes a configuration; missing keys take their defaults.
                    /// - Throws: `DecodingError` for a value of the wrong type. Ranges are checked
                    ///   by ``validate()``.
                    public init(from decoder: any Decoder) throws {
                        let container = try decoder.container(keyedBy: CodingKeys.self)
                        let defaults = Configuration()
                        listen = try container.decodeIfPresent(String.self, forKey: .listen) ?? defaults.listen
                        peers = try container.decodeIfPresent([String].self, forKey: .peers) ?? defaults.peers
                        mtu = try container.decodeIfPresent(Int.self, forKey: .mtu) ?? defaults.mtu
                        bitrate = try container.decodeIfPresent(Int.self, forKey: .bitrate) ?? defaults.bitrate
                    }

                    /// Checks every value and names the first bad key.
                    /// - Throws: `MeshError` `.invalidConfiguration`, e.g.
                    ///   `__name__.mtu must be 4...65535, got 2`.
                    public func validate() throws {
                        guard (PacketFramer.minimumMTU...65_535).contains(mtu) else {
                            throw MeshError(
                                .invalidConfiguration, "__name__.mtu must be \(PacketFramer.minimumMTU)...65535, got \(mtu)")
                        }
                        guard bitrate >= 1 else {
                            throw MeshError(.invalidConfiguration, "__name__.bitrate must be at least 1, got \(bitrate)")
                        }
                    }
                }
            }

            """#)
    }

    var conformanceTests: String {
        fill(
            #"""
            import MeshCore
            import MeshTesting
            import Testing
            import __Module__

            /// The shared transport conformance suite, run against __Name__Transport.
            ///
            /// It fails until the I/O is written: each failure names the TODO to fill in
            /// Sources/__Module__/.
            @Suite(.timeLimit(.minutes(5)))
            struct __Name__ConformanceTests {
                @Test func conformance() async throws {
                    try await TransportConformance.run(.__name__())
                }

                @Test func configurationDefaultsAreValidAndRangesAreChecked() throws {
                    try __Name__Transport.Configuration().validate()
                    #expect(throws: MeshError.self) { try __Name__Transport.Configuration(mtu: 2).validate() }
                    #expect(throws: MeshError.self) { try __Name__Transport.Configuration(bitrate: 0).validate() }
                }
            }

            extension TransportConformance.Harness {
                /// Side A (index 0) and side B (index 1), each listening at its own address; a
                /// restarted side B must listen where it did before.
                ///
                /// TODO: addresses that suit the medium (a temporary path, a free port...), a
                /// dead address where nothing listens, and `injectMalformed`: bytes that break
                /// the transport's framing (an oversized length prefix, an oversized packet).
                static func __name__() -> Self {
                    Self(
                        makeTransport: { index in
                            __Name__Transport(configuration: .init(listen: "__name__-side-\(index)"))
                        },
                        hint: { transport, _ in try #require(transport as? __Name__Transport).localHint },
                        deadHint: PeerHint(transport: "__name__", address: "__name__-nobody-listens-here"),
                        injectMalformed: nil
                    )
                }
            }

            """#)
    }

    var exampleConfig: String {
        fill(
            #"""
            # The __name__ transport, scaffolded by `swift package new-transport __Name__`.
            # It loads once __Name__Transport is registered in the node's TransportRegistry
            # (docs/ADDING_A_TRANSPORT.md, "Register the factory").
            #   scmesh run --config Config/examples/__name__.yaml --data-dir /tmp/__name__
            node:
              name: __name__
            relay:
              enabled: true
            transports:
              __name__:
                enabled: true
                priority: 40
                listen: ""        # where this node accepts links, in the medium's notation
                peers: []         # addresses to dial at start; redialled with backoff
                mtu: 1024         # largest frame per link; the core fragments larger messages
                bitrate: 1000000  # nominal bit/s; a slow medium ranks last for large payloads

            """#)
    }
}
