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
            """#
        )
    }

    var transport: String {
        fill(
            #"""
            import MeshCore
            import Synchronization

            /// Moves SCMesh frames over __Name__.
            ///
            /// TODO: say what the medium is, what an address looks like (the text of
            /// `PeerHint.address`, e.g. "/dev/ttyUSB0" or "AA:BB:CC:DD:EE:FF/0x81") and what
            /// limits the link MTU.
            ///
            /// The router does everything above moving frames: the Noise XX handshake on every
            /// link, fragmentation to ``TransportCapabilities/maxFrameSize``, hop acks, routing,
            /// escalation, keepalive, and redialling with backoff every hint reported here.
            ///
            /// ## Contract (`MeshCore.Transport`)
            /// - ``listen(context:)`` is the transport's whole life, called once: it opens the
            ///   medium, reports `.listening(addresses:)`, then accepted links (`.inboundLink`)
            ///   and hints (`.peerDiscovered` / `.peerLost`) through `context.report`, and
            ///   returns only when the calling task is cancelled, after closing the listener and
            ///   every link. What it runs in the background is a child task (a task group).
            ///   When the medium is missing here it throws
            ///   `MeshError(.transportUnavailable, "<one line why>")`.
            /// - ``dial(_:)`` opens one new link or throws `.dialFailed`; it may be called
            ///   concurrently and must not block other calls.
            public final class __Name__Transport: Transport {
                /// The transport's name: its key under `transports:` in the node config.
                public let name: String
                /// The configuration this transport was made with.
                public let configuration: Configuration
                /// What the medium can do; the routing policy ranks links by it.
                public let capabilities: TransportCapabilities
                /// The open links while ``listen(context:)`` runs (closed when it returns); nil
                /// when it does not run.
                private let links = Mutex<[LinkID: __Name__Link]?>(nil)

                /// Creates a transport; nothing is opened before ``listen(context:)``.
                /// - Parameters:
                ///   - configuration: the `transports.__name__` settings; checked by ``listen(context:)``.
                ///   - name: the name reported by ``name`` and hints; default `"__name__"`.
                public init(configuration: Configuration = Configuration(), name: String = "__name__") {
                    self.name = name
                    self.configuration = configuration
                    // TODO: describe the medium. The policy ranks a transport that cannot move a
                    // payload within the longest ack timeout at `nominalBitrate` last.
                    self.capabilities = TransportCapabilities(
                        maxFrameSize: configuration.mtu, nominalBitrate: configuration.bitrate, isReliable: true,
                        needsDiscovery: false, powerCost: 0)
                }

                /// Opens the medium, reports where it listens and the configured peers, accepts
                /// links until the calling task is cancelled, then closes the listener and every link.
                /// - Throws: `MeshError` `.invalidConfiguration` for bad settings;
                ///   `.transportUnavailable` (one line) when the medium cannot be used here.
                public func listen(context: TransportContext) async throws {
                    try configuration.validate()
                    // TODO: open the medium at `configuration.listen` (nothing when it is empty: a
                    // dial-only node). When the medium is missing here:
                    //   throw MeshError(.transportUnavailable, "__name__: <why, in one line>")
                    links.withLock { $0 = [:] }
                    context.report(.listening(addresses: configuration.listen.isEmpty ? [] : [configuration.listen]))
                    for peer in configuration.peers {
                        context.report(.peerDiscovered(PeerHint(transport: name, address: peer)))
                    }
                    await withDiscardingTaskGroup { group in
                        // TODO: accept in a child task until cancelled; wrap each connection in a
                        // __Name__Link, `track` it (close it when that fails) and report it:
                        //   group.addTask { for await connection in ... { context.report(.inboundLink(link)) } }
                        await waitUntilCancelled()
                        // TODO: close the listener, so the accept loop ends.
                    }
                    let open = links.withLock { links in
                        defer { links = nil }
                        return Array((links ?? [:]).values)
                    }
                    for link in open { await link.close() }
                }

                /// Opens a link to `hint.address`.
                /// - Throws: `MeshError` `.dialFailed` when nothing answers there; `.notRunning`
                ///   when ``listen(context:)`` does not run.
                public func dial(_ hint: PeerHint) async throws -> any Link {
                    guard links.withLock({ $0 != nil }) else {
                        throw MeshError(.notRunning, "__Name__ transport is not listening; run listen(context:) before dialling")
                    }
                    // TODO: connect to `hint.address` and return
                    //   __Name__Link(remoteAddress: hint.address, mtu: configuration.mtu) { [weak self] in self?.forget($0) }
                    // after `track`ing it. When nothing answers:
                    //   throw MeshError(.dialFailed, "could not reach __name__://\(hint.address): <why>")
                    throw MeshError(.dialFailed, "TODO: implement dial in Sources/__Module__/__Name__Transport.swift")
                }

                /// Remembers an open link so it closes when ``listen(context:)`` returns; false
                /// when it does not run (close the link then).
                func track(_ link: __Name__Link) -> Bool {
                    links.withLock { links in
                        links?[link.id] = link
                        return links != nil
                    }
                }

                /// Forgets a link; each link calls it when it closes.
                func forget(_ id: LinkID) {
                    _ = links.withLock { $0?.removeValue(forKey: id) }
                }
            }

            """#
        )
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
            ///   nothing queues without bound). A frame over ``mtu`` throws `.frameTooLarge`;
            ///   after ``close()`` or a failure it throws `.linkClosed`.
            /// - ``receive()`` returns frames in order, `nil` once the remote closed cleanly or
            ///   after ``close()``, and throws when the link failed (a remote that sends a frame
            ///   over ``mtu`` is broken: fail the link).
            /// - ``close()`` is idempotent, wakes a pending ``receive()`` (which returns `nil`)
            ///   and makes the remote's ``receive()`` return `nil` soon after.
            public final class __Name__Link: Link {
                /// The remote's address, in the transport's notation.
                public let remoteAddress: String
                /// Largest frame ``send(_:)`` accepts.
                public let mtu: Int
                /// The transport's handle for this link.
                let id = LinkID.next()
                private let onClose: @Sendable (LinkID) -> Void
                private let closed = Mutex(false)
                // TODO: the connection handle (file descriptor, channel, ...).

                /// Wraps one connection; `onClose` runs once, when the link closes.
                init(remoteAddress: String, mtu: Int, onClose: @escaping @Sendable (LinkID) -> Void) {
                    self.remoteAddress = remoteAddress
                    self.mtu = mtu
                    self.onClose = onClose
                }

                /// Sends one frame, suspending while the medium applies back-pressure.
                public func send(_ frame: [UInt8]) async throws {
                    guard frame.count <= mtu else {
                        throw MeshError(.frameTooLarge, "frame of \(frame.count) bytes exceeds the __name__ link MTU \(mtu)")
                    }
                    guard !closed.withLock({ $0 }) else {
                        throw MeshError(.linkClosed, "__name__ link to \(remoteAddress) is closed")
                    }
                    // TODO: write the frame as one unit; return once the medium took it, waiting
                    // (without blocking a thread) while it is full.
                    throw MeshError(.linkClosed, "TODO: implement send in Sources/__Module__/__Name__Link.swift")
                }

                /// The next frame, or `nil` at the end of the stream.
                public func receive() async throws -> [UInt8]? {
                    if closed.withLock({ $0 }) { return nil }
                    // TODO: wait (without blocking a thread) for the next whole frame; nil when the
                    // remote closed or close() was called meanwhile.
                    throw MeshError(.linkClosed, "TODO: implement receive in Sources/__Module__/__Name__Link.swift")
                }

                /// Closes the link. Idempotent.
                public func close() async {
                    let first = closed.withLock { closed in
                        defer { closed = true }
                        return !closed
                    }
                    guard first else { return }
                    // TODO: shut the connection down, so a pending receive() here and the remote's
                    // receive() return nil, then release the handle.
                    onClose(id)
                }
            }

            """#
        )
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

            """#
        )
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
                        hint: { _, index in PeerHint(transport: "__name__", address: "__name__-side-\(index)") },
                        deadHint: PeerHint(transport: "__name__", address: "__name__-nobody-listens-here"),
                        injectMalformed: nil
                    )
                }
            }

            """#
        )
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

            """#
        )
    }
}
