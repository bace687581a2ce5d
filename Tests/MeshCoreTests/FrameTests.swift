import Testing

@testable import MeshCore

@Suite struct FrameTests {
    static let alice = PeerID.random()
    static let bob = PeerID.random()

    static func sampleFrames() -> [Frame] {
        [
            .data(
                DataFrame(
                    sequence: 1,
                    messageID: .random(),
                    origin: alice,
                    destination: bob,
                    ttl: 7,
                    chunkIndex: 0,
                    chunkCount: 1,
                    messageLength: 5,
                    payload: [1, 2, 3, 4, 5]
                )
            ),
            .data(
                DataFrame(
                    sequence: 99,
                    messageID: .random(),
                    origin: alice,
                    destination: bob,
                    ttl: 1,
                    chunkIndex: 1,
                    chunkCount: 2,
                    messageLength: UInt32(Frame.chunkSize + 10),
                    payload: Array(repeating: 9, count: 10)
                )
            ),
            .ack(AckFrame(cumulative: 10, selective: [12, 14])),
            .ping(nonce: 42),
            .pong(nonce: .max),
        ]
    }

    @Test(arguments: sampleFrames())
    func roundTrip(frame: Frame) throws {
        #expect(try Frame.decode(frame.encoded()) == frame)
    }

    @Test func rejectsWrongVersionUnknownTypeAndTruncation() throws {
        var bytes = Frame.ping(nonce: 1).encoded()
        bytes[0] = 2
        #expect(throws: MeshError.self) { try Frame.decode(bytes) }
        bytes[0] = 1
        bytes[1] = 0x7F
        #expect(throws: MeshError.self) { try Frame.decode(bytes) }
        let data = Self.sampleFrames()[0].encoded()
        for cut in 0..<data.count {
            #expect(throws: MeshError.self) { try Frame.decode(Array(data[..<cut])) }
        }
    }

    @Test func rejectsInconsistentChunkFields() throws {
        let good = DataFrame(
            sequence: 1,
            messageID: .random(),
            origin: Self.alice,
            destination: Self.bob,
            ttl: 7,
            chunkIndex: 0,
            chunkCount: 1,
            messageLength: 3,
            payload: [1, 2, 3]
        )
        var bad = good
        bad.chunkCount = 2
        #expect(throws: MeshError.self) { try Frame.decode(Frame.data(bad).encoded()) }
        bad = good
        bad.chunkIndex = 1
        #expect(throws: MeshError.self) { try Frame.decode(Frame.data(bad).encoded()) }
        bad = good
        bad.messageLength = 4
        #expect(throws: MeshError.self) { try Frame.decode(Frame.data(bad).encoded()) }
        bad = good
        bad.sequence = 0
        #expect(throws: MeshError.self) { try Frame.decode(Frame.data(bad).encoded()) }
        // A declared length over the limit is refused before anything is allocated.
        bad = good
        bad.messageLength = UInt32(Frame.defaultMaxMessageLength + 1)
        #expect(throws: MeshError.self) { try Frame.decode(Frame.data(bad).encoded()) }
    }

    @Test func ackWithTooManyEntriesIsRejected() throws {
        let ack = Frame.ack(AckFrame(cumulative: 1, selective: Array(2...UInt32(Frame.maxSelectiveAcks + 2))))
        let error = #expect(throws: MeshError.self) { try Frame.decode(ack.encoded()) }
        #expect(error?.code == .malformedFrame)
    }

    /// 100,000 random and mutated inputs: the decoder never traps, and whatever it
    /// accepts re-encodes to the same bytes.
    @Test func decoderSurvivesRandomAndMutatedInputs() throws {
        var rng = SystemRandomNumberGenerator()
        let seeds = Self.sampleFrames().map { $0.encoded() }
        var accepted = 0
        var rejected = 0
        for round in 0..<100_000 {
            var input: [UInt8]
            if round % 4 == 0 {
                input = (0..<Int.random(in: 0..<200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            } else {
                input = seeds[round % seeds.count]
                switch Int.random(in: 0..<4, using: &rng) {
                case 0:
                    let index = Int.random(in: 0..<input.count, using: &rng)
                    input[index] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng))
                case 1:
                    input = Array(input.prefix(Int.random(in: 0...input.count, using: &rng)))
                case 2:
                    input += (0..<Int.random(in: 1..<16, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng)
                    }
                default:
                    let index = Int.random(in: 0..<input.count, using: &rng)
                    input[index] = UInt8.random(in: 0...255, using: &rng)
                }
            }
            do {
                let frame = try Frame.decode(input)
                // Everything but the flags (ignored when unknown) survives a round trip.
                let again = frame.encoded()
                #expect(again.count == input.count && again[0..<2] == input[0..<2] && again[4...] == input[4...])
                accepted += 1
            } catch {
                #expect(error.code == .malformedFrame || error.code == .frameTooLarge)
                rejected += 1
            }
        }
        #expect(accepted + rejected == 100_000)
        #expect(rejected > 50_000)
    }
}

@Suite struct PacketFramerTests {
    @Test(arguments: [4, 5, 23, 100, 1024, 65_535])
    func splitsAndReassembles(mtu: Int) throws {
        var reassembler = PacketReassembler()
        for size in [0, 1, mtu - 1, mtu, mtu + 1, 3 * mtu + 7, 65_535] where size >= 0 && size <= 65_535 {
            let segment = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let packets = try PacketFramer.packets(for: segment, mtu: mtu)
            #expect(packets.allSatisfy { $0.count <= mtu })
            var out: [[UInt8]] = []
            for packet in packets {
                if case .segment(let bytes) = try reassembler.feed(packet) { out.append(bytes) }
            }
            #expect(out == [segment])
        }
    }

    @Test func rejectsMalformedPacketsAndRecovers() throws {
        var reassembler = PacketReassembler()
        #expect(throws: MeshError.self) { try reassembler.feed([]) }
        #expect(throws: MeshError.self) { try reassembler.feed([0x00, 1, 2]) }  // continuation without start
        #expect(throws: MeshError.self) { try reassembler.feed([0x13]) }  // unknown flag
        // Declared length 10, but 12 bytes arrive.
        _ = try reassembler.feed([0x80, 0, 10, 1, 2, 3, 4])
        #expect(throws: MeshError.self) { try reassembler.feed([0x40, 5, 6, 7, 8, 9, 10, 11, 12]) }
        // Ends short.
        _ = try reassembler.feed([0x80, 0, 10, 1, 2, 3, 4])
        #expect(throws: MeshError.self) { try reassembler.feed([0x40, 5]) }
        // A whole segment still goes through afterwards.
        #expect(try reassembler.feed([0xC0, 1, 2]) == .segment([1, 2]))
        #expect(throws: MeshError.self) { try PacketFramer.packets(for: [1], mtu: 3) }
        #expect(throws: MeshError.self) {
            try PacketFramer.packets(for: [UInt8](repeating: 0, count: 65_536), mtu: 100)
        }
    }

    /// The messages name the length the first fragment declared (they once said 0,
    /// because the partial segment was reset before the message was formatted).
    @Test func fragmentErrorsNameTheDeclaredLength() throws {
        var reassembler = PacketReassembler()
        _ = try reassembler.feed([0x80, 0, 10, 1, 2, 3, 4])
        let over = #expect(throws: MeshError.self) { try reassembler.feed([0x40, 5, 6, 7, 8, 9, 10, 11, 12]) }
        #expect(over?.code == .malformedFrame)
        #expect(over?.message.contains("declared segment length 10 (12 bytes)") == true, "\(over?.message ?? "")")

        _ = try reassembler.feed([0x80, 0x01, 0x2C, 1, 2, 3, 4])  // declares 300
        _ = try reassembler.feed([0x00, 5, 6])
        let short = #expect(throws: MeshError.self) { try reassembler.feed([0x40, 7]) }
        #expect(short?.message.contains("ended at 7 of 300 declared bytes") == true, "\(short?.message ?? "")")

        // A first fragment must be shorter than the total it declares.
        let notShorter = #expect(throws: MeshError.self) { try reassembler.feed([0x80, 0, 4, 1, 2, 3, 4]) }
        #expect(notShorter?.message.contains("4 bytes of a 4-byte segment") == true, "\(notShorter?.message ?? "")")
        #expect(reassembler.discarded == 2)
    }

    @Test func packetReassemblerSurvivesRandomInput() {
        var reassembler = PacketReassembler()
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<100_000 {
            let packet = (0..<Int.random(in: 0..<40, using: &rng)).map { _ in
                [0x00, 0x40, 0x80, 0xC0, UInt8.random(in: 0...255, using: &rng)][Int.random(in: 0..<5, using: &rng)]
            }
            if case .segment(let bytes)? = try? reassembler.feed(packet) {
                #expect(bytes.count <= PacketFramer.maxSegmentSize)
            }
        }
    }
}

@Suite struct PolicyTests {
    static func candidate(
        _ id: UInt64,
        _ name: String,
        _ priority: Int,
        failures: Int = 0,
        bitrate: Int = 1_000_000_000
    ) -> LinkCandidate {
        LinkCandidate(
            linkID: LinkID(rawValue: id),
            transport: name,
            priority: priority,
            capabilities: TransportCapabilities(
                maxFrameSize: 1000,
                nominalBitrate: bitrate,
                isReliable: true,
                needsDiscovery: false,
                powerCost: 1
            ),
            smoothedRTT: nil,
            consecutiveFailures: failures
        )
    }

    @Test func ranksByPriorityThenHealth() {
        let policy = PriorityEscalationPolicy()
        let ranked = policy.rank(
            [Self.candidate(1, "tcp", 30), Self.candidate(2, "mdns", 10), Self.candidate(3, "ble", 20)],
            payloadSize: 10
        )
        #expect(ranked.map(\.transport) == ["mdns", "ble", "tcp"])
        let degraded = policy.rank(
            [Self.candidate(2, "mdns", 10, failures: 2), Self.candidate(3, "ble", 20)],
            payloadSize: 10
        )
        #expect(degraded.map(\.transport) == ["ble", "mdns"])
    }

    @Test func slowTransportsGoLastForBulk() {
        let policy = PriorityEscalationPolicy()
        let ble = Self.candidate(1, "ble", 20, bitrate: 200_000)
        let tcp = Self.candidate(2, "tcp", 30)
        #expect(policy.rank([ble, tcp], payloadSize: 100).map(\.transport) == ["ble", "tcp"])
        #expect(policy.rank([ble, tcp], payloadSize: 10_000_000).map(\.transport) == ["tcp", "ble"])
    }

    @Test func ackTimeoutIsClamped() {
        let policy = PriorityEscalationPolicy(
            configuration: .init(ackTimeoutMin: .milliseconds(100), ackTimeoutMax: .seconds(2))
        )
        var fast = Self.candidate(1, "tcp", 30)
        fast.smoothedRTT = .microseconds(50)
        #expect(policy.ackTimeout(for: fast, bytes: 10) == .milliseconds(100))
        var slow = fast
        slow.smoothedRTT = .seconds(5)
        #expect(policy.ackTimeout(for: slow, bytes: 10) == .seconds(2))
    }

    @Test func reconnectScheduleDoublesToTheCap() {
        let schedule = ReconnectConfiguration()
        #expect((0..<7).map { schedule.delay(attempt: $0) } == [1, 2, 4, 8, 16, 30, 30].map { Duration.seconds($0) })
    }
}
