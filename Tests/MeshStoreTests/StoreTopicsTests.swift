import Foundation
import MeshCore
import Testing

@testable import MeshStore

/// The topic side of the store (migration v4-topics): subscription choices and seen
/// topic message IDs survive a reopen, seen IDs are forgotten when their lifetime
/// ends, and inbox entries keep their topic.
@Suite struct StoreTopicsTests {
    @Test func subscriptionsAndSeenIDsSurviveAReopenAndExpire() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let clock = TestClock()
            let seen = MessageID.random()
            let shortLived = MessageID.random()
            try await withReopened(path, clock: clock) { store throws in
                try await store.topics.setTopicSubscription("/a/v1", subscribed: true)
                try await store.topics.setTopicSubscription("/scmesh/global/v1", subscribed: false)
                try await store.topics.setTopicSubscription("/a/v1", subscribed: true)
                try await store.topics.rememberTopicMessage(seen, for: .seconds(3600))
                try await store.topics.rememberTopicMessage(shortLived, for: .seconds(10))
            }
            clock.advance(by: 60)
            try await withReopened(path, clock: clock) { store throws in
                #expect(try await store.topics.topicSubscriptions() == ["/a/v1": true, "/scmesh/global/v1": false])
                let loaded = try await store.topics.seenTopicMessages()
                #expect(loaded.map(\.0) == [seen])
                let left = try #require(loaded.first?.1)
                #expect(left == .seconds(3600 - 60))
                #expect(try await store.topics.seenCount == 1)
            }
        }
    }

    @Test func inboxEntriesKeepTheirTopic() async throws {
        try await withStore { store throws in
            let peer = PeerID.random()
            var topical = message(from: peer, "on a topic")
            topical.topic = "/scmesh/global/v1"
            try await store.inbox.append(topical)
            try await store.inbox.append(message(from: peer, "direct"))
            let entries = try await store.inbox.entries()
            #expect(entries.map(\.message.topic) == ["/scmesh/global/v1", nil])
        }
    }
}
