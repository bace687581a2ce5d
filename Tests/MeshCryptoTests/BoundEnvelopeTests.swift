import MeshCore
import Testing

@testable import MeshCrypto

/// Format 2 of the sealed envelope (docs/PROTOCOL.md §B.3): it binds the DATA frame's
/// message ID, its receipt and emergency flags and a creation time, and opens only for
/// a frame that carries what it binds, within the age window.
@Suite struct BoundEnvelopeTests {
    static let alice = NodeIdentity.generate()
    static let bob = NodeIdentity.generate()
    static let now: UInt64 = 1_800_000_000_000
    static let sealer = EnvelopeSealer(identity: alice, now: { now })
    static let opener = EnvelopeSealer(identity: bob, now: { now })

    @Test func roundTripAndLayout() throws {
        let id = MessageID.random()
        let binding = SealBinding(
            messageID: id,
            flags: DataFrame.emergencyFlag | DataFrame.floodFlag | DataFrame.sealedFlag
        )
        #expect(binding.flags == DataFrame.emergencyFlag)  // only end-to-end flags are bound
        let sealed = try Self.sealer.seal([1, 2, 3], to: Self.bob.peerID, binding: binding)
        #expect(sealed.count == 3 + Envelope.boundOverhead && Envelope.boundOverhead == 227)
        #expect(sealed[0] == 2)
        let read = try #require(try Envelope.binding(of: sealed))
        #expect(read.binding == binding && read.createdMillis == Self.now)
        #expect(try Self.opener.open(sealed, from: Self.alice.peerID, binding: binding) == [1, 2, 3])
        try Self.opener.verify(sealed, from: Self.alice.peerID, binding: binding)
        // A relay may clear the emergency flag (a link without `emergency`), never set it.
        #expect(
            try Self.opener.open(sealed, from: Self.alice.peerID, binding: SealBinding(messageID: id, flags: 0)) == [
                1, 2, 3,
            ]
        )
        // Format 1 still opens, and binds nothing.
        let plain = try Self.sealer.seal([4], to: Self.bob.peerID)
        #expect(try Envelope.binding(of: plain) == nil)
        #expect(try Self.opener.open(plain, from: Self.alice.peerID, binding: binding) == [4])
    }

    @Test(arguments: [
        SealBinding(messageID: MessageID(high: 9, low: 9), flags: 0),  // a fresh ID
        SealBinding(messageID: MessageID(high: 1, low: 1), flags: DataFrame.emergencyFlag),  // made an emergency
        SealBinding(messageID: MessageID(high: 1, low: 1), flags: DataFrame.receiptFlag),  // made a receipt
    ])
    func aFrameThatDiffersFromTheBindingIsRefused(frame: SealBinding) throws {
        let sealed = try Self.sealer.seal(
            [1],
            to: Self.bob.peerID,
            binding: SealBinding(messageID: MessageID(high: 1, low: 1), flags: 0)
        )
        for check in [
            { _ = try Self.opener.open(sealed, from: Self.alice.peerID, binding: frame) },
            { try Self.opener.verify(sealed, from: Self.alice.peerID, binding: frame) },
        ] {
            let error = #expect(throws: MeshError.self) { try check() }
            #expect(error?.code == .bindingMismatch)
        }
    }

    @Test func alteredBindingOrStaleCreationTimeIsRefused() throws {
        let binding = SealBinding(messageID: .random(), flags: 0)
        var altered = try Self.sealer.seal([1], to: Self.bob.peerID, binding: binding)
        altered[121] ^= 0x01  // the bound message ID
        let tampered = #expect(throws: MeshError.self) {
            try Self.opener.open(altered, from: Self.alice.peerID, binding: binding)
        }
        #expect(tampered?.code == .badSignature)
        let day: UInt64 = 86_400_000
        for created in [Self.now - 8 * day - 1, Self.now + day + 1] {
            let sealer = EnvelopeSealer(identity: Self.alice, now: { created })
            let sealed = try sealer.seal([1], to: Self.bob.peerID, binding: binding)
            let error = #expect(throws: MeshError.self) {
                try Self.opener.open(sealed, from: Self.alice.peerID, binding: binding)
            }
            #expect(error?.code == .envelopeStale)
        }
    }
}
