import Foundation
import MeshCore
import MeshNode
import MeshNodeHTTP
import MeshTesting
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// One parsed server-sent event.
struct SSEEvent: Equatable {
    var id: Int?
    var event: String?
    var data: String

    var kind: String? {
        (try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])?["kind"] as? String
    }

    var messageID: String? {
        (try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])?["message_id"] as? String
    }
}

/// Reads `GET /api/v1/events` until `done` says so, then drops the connection.
func readEvents(
    _ node: HTTPNode,
    query: String = "",
    lastEventID: Int? = nil,
    until done: ([SSEEvent]) -> Bool
) async throws -> [SSEEvent] {
    let (host, port) = ("127.0.0.1", Int(node.address.split(separator: ":").last!)!)
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .connect(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHTTPClientHandlers()
                return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                    wrappingChannelSynchronously: channel
                )
            }
        }
    var headers = HTTPHeaders([("Host", node.address), ("Authorization", "Bearer \(node.token)")])
    if let lastEventID { headers.add(name: "Last-Event-ID", value: String(lastEventID)) }
    return try await channel.executeThenClose { inbound, outbound in
        try await outbound.write(
            .head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/api/v1/events\(query)", headers: headers))
        )
        try await outbound.write(.end(nil))
        var text = ""
        var events: [SSEEvent] = []
        for try await part in inbound {
            switch part {
            case .head(let head):
                #expect(head.status == .ok)
                #expect(head.headers["Content-Type"].first == "text/event-stream")
            case .body(let buffer):
                text += String(buffer: buffer)
                while let range = text.range(of: "\n\n") {
                    let block = text[..<range.lowerBound]
                    text = String(text[range.upperBound...])
                    var event = SSEEvent(id: nil, event: nil, data: "")
                    var hasData = false
                    for line in block.split(separator: "\n") {
                        if line.hasPrefix("id: ") { event.id = Int(line.dropFirst(4)) }
                        if line.hasPrefix("event: ") { event.event = String(line.dropFirst(7)) }
                        if line.hasPrefix("data: ") {
                            event.data = String(line.dropFirst(6))
                            hasData = true
                        }
                    }
                    if hasData { events.append(event) }
                }
                if done(events) { return events }
            case .end:
                return events
            }
        }
        return events
    }
}

@Suite("HTTP event stream")
struct EventStreamTests {
    /// Sends `count` messages from `a` to `b` and waits until each is delivered.
    func sendDelivered(_ count: Int, from a: HTTPNode, to b: HTTPNode, tag: String) async throws -> [String] {
        var ids: [String] = []
        for index in 0..<count {
            let reply = try await a.call(
                .POST,
                "/api/v1/messages",
                json: #"{"peer":"\#(b.node.peerID.hex)","text":"\#(tag) \#(index)","wait":true}"#
            )
            #expect(reply.object["status"] as? String == "delivered", "\(reply.text)")
            ids.append(try #require(reply.object["message_id"] as? String))
        }
        return ids
    }

    @Test(
        "a client that drops mid-stream and reconnects with Last-Event-ID gets every event once, ids increasing by one"
    )
    func resumeWithoutGaps() async throws {
        try await HTTPNode.withPair { a, b in
            let before = try await sendDelivered(3, from: a, to: b, tag: "before")
            // First connection: from the start of the ring, until the first batch's last
            // delivery; then the client goes away.
            let first = try await readEvents(a, query: "?since=0") { events in
                events.contains { $0.kind == "message_delivered" && $0.messageID == before.last }
            }
            let lastSeen = try #require(first.last?.id)
            // Events happen while no client listens.
            let during = try await sendDelivered(4, from: a, to: b, tag: "during")
            // Reconnect with Last-Event-ID: resumes after it.
            let second = try await readEvents(a, lastEventID: lastSeen) { events in
                events.contains { $0.kind == "message_delivered" && $0.messageID == during.last }
            }
            let resumed = first + second
            let ids = resumed.compactMap(\.id)
            #expect(ids.count == resumed.count, "every event has an id")
            #expect(ids == Array(1...ids.count), "ids \(ids) are not 1...n without gaps or repeats")
            #expect(!second.isEmpty && second.first?.id == lastSeen + 1)
            for id in before + during {
                for kind in ["message_queued", "message_delivered"] {
                    #expect(resumed.filter { $0.kind == kind && $0.messageID == id }.count == 1, "\(kind) of \(id)")
                }
            }
            // A third client reading everything from the ring sees the same sequence.
            let whole = try await readEvents(a, query: "?since=0") { events in (events.last?.id ?? 0) >= ids.count }
            #expect(Array(whole.prefix(resumed.count)) == resumed)
        }
    }

    @Test("resuming after events that left the ring says how many were missed, then carries on")
    func gapReported() async throws {
        try await HTTPNode.withPair(eventCapacity: 4) { a, b in
            let sent = try await sendDelivered(3, from: a, to: b, tag: "ring")
            let events = try await readEvents(a, lastEventID: 1) { events in
                events.contains { $0.kind == "message_delivered" && $0.messageID == sent.last }
            }
            let gap = try #require(events.first)
            #expect(gap.event == "gap" && gap.data.contains("missed"))
            let ids = events.dropFirst().compactMap(\.id)
            #expect(ids.count == 4 && ids == Array(ids[0]...ids[0] + 3))
        }
    }
}

@Suite("HTTP metrics")
struct MetricsTests {
    @Test("/metrics is Prometheus text: scmesh_ names, TYPE lines, counters that count a delivered message")
    func prometheusText() async throws {
        try await HTTPNode.withPair { a, b in
            let reply = try await a.call(
                .POST,
                "/api/v1/messages?to=\(b.node.peerID.hex)&wait=true",
                body: Array(repeating: 7, count: 5000)
            )
            #expect(reply.status == 200)
            let scrape = try await a.call(.GET, "/metrics")
            #expect(scrape.status == 200)
            #expect(scrape.header("Content-Type")?.hasPrefix("text/plain") == true)
            let samples = try parsePrometheus(scrape.text)
            #expect(samples.keys.allSatisfy { $0.hasPrefix("scmesh_") }, "\(samples.keys.sorted())")
            #expect(samples["scmesh_messages_sent_total"]?[""] == 1)
            #expect((samples["scmesh_transport_bytes_sent_total"]?["transport=loopback"] ?? 0) >= 5000)
            #expect((samples["scmesh_transport_frames_sent_total"]?["transport=loopback"] ?? 0) >= 1)
            #expect(samples["scmesh_outbox_messages"]?[""] == 0)
            #expect(samples["scmesh_peers"]?[""] == 1)
            #expect(samples["scmesh_transport_up"]?["transport=loopback"] == 1)
            // Routing counters are exported, the announcement ones included.
            for name in ["sent", "accepted", "ignored", "suppressed"] {
                #expect(samples["scmesh_announces_\(name)_total"]?[""] != nil, "scmesh_announces_\(name)_total missing")
            }
            // By message class: a's message went out direct and its receipt came back; b
            // received it and returned the receipt; nothing was relayed.
            func byClass(_ samples: [String: [String: Double]], _ messageClass: String, _ direction: String) -> Double?
            {
                samples["scmesh_messages_by_class_total"]?["class=\(messageClass),direction=\(direction)"]
            }
            #expect(byClass(samples, "direct", "sent") == 1)
            #expect(byClass(samples, "receipt", "received") == 1)
            #expect(byClass(samples, "relayed", "sent") == 0 && byClass(samples, "relayed", "received") == 0)
            #expect(byClass(samples, "topic", "sent") == 0)
            let atB = try parsePrometheus(try await b.call(.GET, "/metrics").text)
            #expect(byClass(atB, "direct", "received") == 1)
            #expect(byClass(atB, "receipt", "sent") == 1)
            #expect(byClass(atB, "direct", "sent") == 0)
            // A topic message published by a (through the topic routes) counts as topic
            // sent at a and, once b has it, topic received at b.
            let topic = #"{"topic":"/scmesh/metrics-test/v1"}"#
            #expect(try await b.call(.POST, "/api/v1/topics/subscribe", json: topic).status == 200)
            #expect(try await a.call(.POST, "/api/v1/topics/subscribe", json: topic).status == 200)
            let topics = try await a.call(.GET, "/api/v1/topics")
            #expect(topics.status == 200 && topics.text.contains("/scmesh/metrics-test/v1"))
            try await eventually("b is in a's mesh for the topic") {
                let reply = try await a.control.call(.topics).decode(TopicsReply.self)
                return reply.topics.first { $0.topic == "/scmesh/metrics-test/v1" }?.mesh.contains(b.node.peerID)
                    == true
            }
            let publish = #"{"topic":"/scmesh/metrics-test/v1","text":"to the topic"}"#
            #expect(try await a.call(.POST, "/api/v1/topics/publish", json: publish).status == 200)
            try await eventually("b counts the topic message as received") {
                byClass(try parsePrometheus(try await b.call(.GET, "/metrics").text), "topic", "received") == 1
            }
            #expect(byClass(try parsePrometheus(try await a.call(.GET, "/metrics").text), "topic", "sent") == 1)
            // A second scrape counts on from the first (no double counting).
            _ = try await a.call(.POST, "/api/v1/messages?to=\(b.node.peerID.hex)&wait=true", body: [1])
            let again = try parsePrometheus(try await a.call(.GET, "/metrics").text)
            #expect(again["scmesh_messages_sent_total"]?[""] == 2)
        }
    }
}

/// Parses the Prometheus text format (0.0.4): `# HELP`/`# TYPE` lines and samples
/// `name{label="value",…} number`, by name and then by `k=v,…` labels.
/// - Throws: on any line that is neither.
func parsePrometheus(_ text: String) throws -> [String: [String: Double]] {
    struct Malformed: Error, CustomStringConvertible { var description: String }
    var samples: [String: [String: Double]] = [:]
    var types: [String: String] = [:]
    for line in text.split(separator: "\n") {
        if line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else {
                throw Malformed(description: "bad TYPE line: \(line)")
            }
            types[String(parts[2])] = String(parts[3])
            continue
        }
        if line.hasPrefix("#") { continue }
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
            throw Malformed(description: "bad sample: \(line)")
        }
        let series = line[..<space]
        var name = Substring(series)
        var labels = ""
        if let brace = series.firstIndex(of: "{") {
            guard series.hasSuffix("}") else { throw Malformed(description: "bad labels: \(line)") }
            name = series[..<brace]
            let inner = series[series.index(after: brace)..<series.index(before: series.endIndex)]
            labels = try inner.split(separator: ",").map { pair -> String in
                let kv = pair.split(separator: "=", maxSplits: 1)
                guard kv.count == 2, kv[1].hasPrefix("\""), kv[1].hasSuffix("\"") else {
                    throw Malformed(description: "bad label: \(line)")
                }
                return "\(kv[0])=\(kv[1].dropFirst().dropLast())"
            }.sorted().joined(separator: ",")
        }
        guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" }), types[String(name)] != nil
        else {
            throw Malformed(description: "sample without a TYPE or with a bad name: \(line)")
        }
        samples[String(name), default: [:]][labels] = value
    }
    return samples
}
