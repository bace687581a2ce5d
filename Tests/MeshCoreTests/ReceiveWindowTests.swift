import Testing

@testable import MeshCore

/// The receiving side of hop sequence numbers (docs/PROTOCOL.md §A.3): what an ACK
/// says after frames were recorded, refused or never arrived. Instants are built from
/// one base; no time passes.
@Suite struct ReceiveWindowTests {
    static let hold = Duration.seconds(20)
    let start = ContinuousClock.now

    static func frame(_ sequence: UInt32, message: MessageID = .random(), chunk: UInt16 = 0) -> DataFrame {
        DataFrame(
            sequence: sequence,
            messageID: message,
            origin: .random(),
            destination: .random(),
            ttl: 7,
            chunkIndex: chunk,
            chunkCount: 1,
            messageLength: 1,
            payload: [0]
        )
    }

    /// Receives `sequence` (recorded) at `at`.
    static func receive(_ sequence: UInt32, _ window: inout ReceiveWindow, at: ContinuousClock.Instant) {
        window.arrived(sequence, at: at)
        window.record(sequence)
    }

    /// A frame lost on a link that stays up (number 1 never arrives): the ACKs list what
    /// came after it, and once the hold has passed since number 2 arrived, 1 counts as
    /// consumed and the cumulative point moves over everything recorded (before: it
    /// stayed at 0 for good, and past 256 numbers above it nothing new was
    /// acknowledged).
    @Test func aNumberThatNeverArrivesIsConsumedOnceTheHoldHasPassed() {
        var window = ReceiveWindow(hold: Self.hold)
        Self.receive(2, &window, at: start)
        Self.receive(3, &window, at: start + .seconds(1))
        let afterTwoAndThree = window.takeAck()
        #expect(afterTwoAndThree == AckFrame(cumulative: 0, selective: [2, 3]))
        #expect(window.nextExpiry == start + Self.hold + .nanoseconds(1))
        let tooEarly = window.expire(now: start + Self.hold)
        #expect(!tooEarly, "not before the hold has passed")
        #expect(window.cumulative == 0)
        let expired = window.expire(now: start + Self.hold + .nanoseconds(1))
        #expect(expired)
        #expect(window.ackOwed)
        let afterTheHold = window.takeAck()
        #expect(afterTheHold == AckFrame(cumulative: 3, selective: []))
        #expect(window.nextExpiry == nil)
        // A late copy of number 1 is a reused number: acknowledged again, nothing moves.
        let lateCopy = window.record(1)
        #expect(lateCopy)
        let ackAgain = window.takeAck()
        #expect(ackAgain == AckFrame(cumulative: 3, selective: []))
    }

    /// Gaps one after another, as on a link losing one frame in ten: each is consumed
    /// the hold after the first number above it arrived, not later.
    @Test func eachGapIsConsumedTheHoldAfterTheNumberAboveItArrived() {
        var window = ReceiveWindow(hold: Self.hold)
        var at = start
        for sequence: UInt32 in 1...100 where sequence % 10 != 5 {
            Self.receive(sequence, &window, at: at)
            at += .seconds(1)
        }
        #expect(window.cumulative == 4)
        // Number 6 arrived at start + 4 s (5 is missing), 16 at start + 13 s.
        let firstGap = window.expire(now: start + .seconds(4) + Self.hold + .nanoseconds(1))
        #expect(firstGap)
        #expect(window.cumulative == 14)
        let secondGap = window.expire(now: start + .seconds(13) + Self.hold + .nanoseconds(1))
        #expect(secondGap)
        #expect(window.cumulative == 24)
        let allGaps = window.expire(now: at + Self.hold)
        #expect(allGaps)
        #expect(window.cumulative == 100)
    }

    /// A refused frame's number holds the cumulative point back until the same chunk
    /// comes again on the link (its sender gave up on the number), then is consumed; or
    /// until the hold has passed since the refusal.
    @Test func aRefusedNumberIsConsumedWhenItsChunkIsRetried() {
        var window = ReceiveWindow(hold: Self.hold)
        let message = MessageID.random()
        Self.receive(1, &window, at: start)
        let refused = Self.frame(2, message: message)
        window.arrived(2, at: start)
        let refusalExpiry = window.refuse(refused, at: start)
        #expect(refusalExpiry == start + Self.hold + .nanoseconds(1))
        Self.receive(3, &window, at: start)
        let whileRefused = window.takeAck()
        #expect(whileRefused == AckFrame(cumulative: 1, selective: [3]))
        let retry = Self.frame(4, message: message)
        window.arrived(4, at: start)
        let retryRecorded = window.record(4)
        #expect(retryRecorded)
        let holeConsumed = window.retried(retry)
        #expect(holeConsumed)
        let afterTheRetry = window.takeAck()
        #expect(afterTheRetry == AckFrame(cumulative: 4, selective: []))
        // Another message's chunk with the same index consumes nothing.
        window.arrived(6, at: start)
        window.refuse(Self.frame(6, message: message, chunk: 1), at: start)
        Self.receive(7, &window, at: start)
        let otherMessage = window.retried(Self.frame(7, message: .random(), chunk: 1))
        #expect(!otherMessage)
        #expect(window.cumulative == 4, "number 5 never came, 6 was refused")
        let refusalExpired = window.expire(now: start + Self.hold + .nanoseconds(1))
        #expect(refusalExpired)
        #expect(window.cumulative == 7)
    }

    /// The numbers recorded since the last ACK are listed first: with more than 256
    /// numbers above a missing one, a new frame is still acknowledged at once.
    @Test func aNewNumberIsListedEvenWithManyOlderOnesAboveAGap() {
        var window = ReceiveWindow(hold: Self.hold)
        for sequence: UInt32 in 2...400 { Self.receive(sequence, &window, at: start) }
        let first = window.takeAck()
        #expect(first.cumulative == 0)
        #expect(first.selective.count == Frame.maxSelectiveAcks)
        Self.receive(401, &window, at: start)
        let second = window.takeAck()
        #expect(second.selective.first == 401)
        #expect(second.selective.count == Frame.maxSelectiveAcks)
        #expect(Array(second.selective.dropFirst()) == Array(2...256))
    }

    /// A hostile sender's numbers at the top of the range, or far ahead, cannot make the
    /// window trap or hold more than its bound.
    @Test func numbersAtTheTopOfTheRangeNeitherTrapNorGrowTheWindow() {
        var window = ReceiveWindow(hold: Self.hold)
        Self.receive(UInt32.max, &window, at: start)
        Self.receive(UInt32.max - 1, &window, at: start)
        let topExpired = window.expire(now: start + Self.hold + .seconds(1))
        #expect(topExpired)
        #expect(window.cumulative == UInt32.max)
        Self.receive(UInt32.max, &window, at: start + Self.hold * 2)
        let markAtTheTop = window.arrived(7, at: start)
        #expect(markAtTheTop == nil)
        let ackAtTheTop = window.takeAck()
        #expect(ackAtTheTop.cumulative == UInt32.max)

        var bounded = ReceiveWindow(hold: Self.hold)
        var recorded = 0
        for sequence in UInt32(2)...UInt32(ReceiveWindow.maxOutOfOrder + 1) where bounded.record(sequence) {
            recorded += 1
        }
        #expect(recorded == ReceiveWindow.maxOutOfOrder)
        let beyondTheBound = bounded.record(UInt32(ReceiveWindow.maxOutOfOrder + 10))
        #expect(!beyondTheBound, "beyond the bound: not recorded")
        // A gap opened below every second number, 500 in all: 63 marks, and the newest
        // replaced by each later one. All are consumed once the hold has passed since
        // the last arrival, and not before.
        for (index, sequence) in stride(from: UInt32(10_000), to: 11_000, by: 2).enumerated() {
            bounded.arrived(sequence, at: start + .milliseconds(index))
        }
        let early = bounded.expire(now: start + .milliseconds(62) + Self.hold + .nanoseconds(1))
        #expect(early)
        #expect(bounded.cumulative == 10_000 + 2 * 62 - 1, "the 63 marks of their own")
        let tooEarlyForTheLast = bounded.expire(now: start + .milliseconds(498) + Self.hold)
        #expect(!tooEarlyForTheLast)
        let last = bounded.expire(now: start + .milliseconds(499) + Self.hold + .nanoseconds(1))
        #expect(last)
        #expect(bounded.cumulative == 10_997)
        #expect(bounded.nextExpiry == nil)
    }
}

/// A frame handed to delivery whose commit has not landed is never consumed by an
/// expiry: the cumulative point waits below it until it is recorded or refused.
@Suite struct ReceiveWindowDeliveryTests {
    let start = ContinuousClock.now

    @Test func aFrameBeingDeliveredIsNeverConsumedByTheHold() {
        var window = ReceiveWindow(hold: ReceiveWindowTests.hold)
        // Number 1 is being delivered (its commit is slow); 2 never arrives; 3 is recorded.
        window.arrived(1, at: start)
        window.delivering(1)
        window.arrived(3, at: start)
        window.delivering(3)
        window.record(3)
        #expect(window.inDelivery == 1)
        let afterTheHold = start + ReceiveWindowTests.hold + .seconds(1)
        let moved = window.expire(now: afterTheHold)
        #expect(!moved, "number 1 is not acknowledged before its delivery ended")
        #expect(window.cumulative == 0)
        #expect(window.nextExpiry == nil, "nothing to do until number 1's delivery ends")
        // Its commit landed: recorded, and the gap above it is consumed by the next expiry.
        window.record(1)
        #expect(window.cumulative == 1)
        #expect(window.nextExpiry != nil)
        let gapConsumed = window.expire(now: afterTheHold)
        #expect(gapConsumed)
        #expect(window.cumulative == 3)
        #expect(window.takeAck() == AckFrame(cumulative: 3, selective: []))
    }

    @Test func aRefusedDeliveryNoLongerHoldsTheExpiry() {
        var window = ReceiveWindow(hold: ReceiveWindowTests.hold)
        window.arrived(1, at: start)
        window.delivering(1)
        window.arrived(3, at: start)
        let afterTheHold = start + ReceiveWindowTests.hold + .seconds(1)
        let whileDelivering = window.expire(now: afterTheHold)
        #expect(!whileDelivering)
        // The sink refused it: not acknowledged, and no longer being delivered, so the
        // gap's expiry (due already) consumes it with the number never seen.
        window.refuse(ReceiveWindowTests.frame(1), at: afterTheHold)
        #expect(window.inDelivery == 0)
        #expect(window.nextExpiry != nil)
        let consumed = window.expire(now: afterTheHold)
        #expect(consumed)
        #expect(window.cumulative == 2)
    }
}
