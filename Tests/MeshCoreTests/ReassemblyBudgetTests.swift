import Testing

@testable import MeshCore

/// The global reassembly budget against a handful of identities that park
/// almost-complete messages (each within its per-peer limit) to fill it.
@Suite("Reassembly budget")
struct ReassemblyBudgetTests {
    /// Chunk `index` of a message of `count` full chunks.
    static func chunk(_ id: MessageID, from origin: PeerID, index: Int, of count: Int) -> DataFrame {
        DataFrame(
            sequence: 0,
            messageID: id,
            origin: origin,
            destination: .random(),
            ttl: 1,
            chunkIndex: UInt16(index),
            chunkCount: UInt16(count),
            messageLength: UInt32(count * Frame.chunkSize),
            payload: [UInt8](repeating: UInt8(index & 0xFF), count: Frame.chunkSize)
        )
    }

    @Test(
        "four identities each parking all but one chunk of a largest message cannot keep an honest one of that size out"
    )
    func parkedPartialsDoNotStarveAnHonestMessage() {
        // The defaults' shape scaled down: a global budget of four largest messages,
        // a per-peer limit of one and a little.
        let chunks = 16
        let limits = ReassemblyLimits(
            maxMessages: 64,
            maxBytes: 4 * chunks * Frame.chunkSize,
            maxMessagesPerPeer: 4,
            maxBytesPerPeer: (chunks + 1) * Frame.chunkSize
        )
        var assembler = MessageAssembler(limits: limits)
        let start = ContinuousClock.now
        for attacker in 0..<4 {
            let peer = PeerID.random()
            let id = MessageID.random()
            for index in 0..<(chunks - 1) {
                let outcome = assembler.add(
                    Self.chunk(id, from: peer, index: index, of: chunks),
                    from: peer,
                    now: start + .milliseconds(attacker)
                )
                #expect(outcome == .incomplete)
            }
        }
        let honest = PeerID.random()
        let id = MessageID.random()
        var last = MessageAssembler.Outcome.incomplete
        for index in 0..<chunks {
            last = assembler.add(
                Self.chunk(id, from: honest, index: index, of: chunks),
                from: honest,
                now: start + .seconds(1)
            )
            if case .rejected(let why) = last {
                Issue.record("chunk \(index) refused: \(why)")
                return
            }
        }
        guard case .complete(let message) = last else {
            Issue.record("the honest message did not complete: \(last)")
            return
        }
        #expect(message.count == chunks * Frame.chunkSize)
        #expect(assembler.evicted >= 1)
    }

    @Test(
        "a neighbour never evicts partials of one that holds no more than it does, so the count limit still holds against equals"
    )
    func equalsDoNotEvictEachOther() {
        let limits = ReassemblyLimits(
            maxMessages: 2,
            maxBytes: 1 << 30,
            maxMessagesPerPeer: 2,
            maxBytesPerPeer: 1 << 30
        )
        var assembler = MessageAssembler(limits: limits)
        let now = ContinuousClock.now
        let a = PeerID.random()
        let b = PeerID.random()
        #expect(assembler.add(Self.chunk(.random(), from: a, index: 0, of: 2), from: a, now: now) == .incomplete)
        #expect(assembler.add(Self.chunk(.random(), from: b, index: 0, of: 2), from: b, now: now) == .incomplete)
        let third = assembler.add(Self.chunk(.random(), from: b, index: 0, of: 2), from: b, now: now)
        guard case .rejected = third else {
            Issue.record("a third message fit a limit of 2: \(third)")
            return
        }
        #expect(assembler.evicted == 0)
    }
}
