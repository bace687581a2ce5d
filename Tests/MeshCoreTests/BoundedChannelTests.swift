import MeshCore
import Testing

@Suite struct BoundedChannelTests {
    /// Order survives every interleaving of a fast producer and a slow consumer.
    @Test(arguments: [1, 2, 64])
    func keepsOrderUnderContention(capacity: Int) async {
        let channel = BoundedChannel<Int>(capacity: capacity)
        let count = 20_000
        let producer = Task {
            for value in 0..<count { await channel.send(value) }
            channel.finish()
        }
        var expected = 0
        while let value = await channel.receive() {
            #expect(value == expected)
            if value != expected { break }
            expected += 1
            if expected % 97 == 0 { await Task.yield() }
        }
        await producer.value
        #expect(expected == count)
    }

    @Test func sendAfterFinishIsRefusedAndBufferedElementsDrain() async {
        let channel = BoundedChannel<Int>(capacity: 4)
        await channel.send(1)
        channel.finish()
        #expect(await channel.send(2) == false)
        #expect(await channel.receive() == 1)
        #expect(await channel.receive() == nil)
    }
}

@Suite struct CancellationTests {
    @Test func aCancelledSenderLeavesTheQueueAndOthersKeepTheirOrder() async {
        let channel = BoundedChannel<Int>(capacity: 1)
        await channel.send(0)
        let blocked = Task { await channel.send(1) }
        let behind = Task {
            await Task.yield()
            return await channel.send(2)
        }
        blocked.cancel()
        #expect(await blocked.value == false)
        #expect(await channel.receive() == 0)
        #expect(await channel.receive() == 2)
        #expect(await behind.value == true)
    }

    @Test func aCancelledReceiverGetsNil() async {
        let channel = BoundedChannel<Int>(capacity: 4)
        let receiver = Task { await channel.receive() }
        receiver.cancel()
        #expect(await receiver.value == nil)
        // The channel still works for the next receiver.
        await channel.send(5)
        #expect(await channel.receive() == 5)
    }
}
