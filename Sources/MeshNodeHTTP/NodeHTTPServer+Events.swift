import Foundation
import HTTPTypes
import Hummingbird
import MeshCore
import MeshNode

extension NodeHTTPServer {
    /// `GET /api/v1/events`: Server-Sent Events. Each event is
    /// `id: N` + `data: {"id":N,"time":"…","kind":"link_up",…}`; ids increase by one
    /// per event for the node's lifetime. `Last-Event-ID: N` (or `?since=N`) resumes
    /// after event N from the ring of recent events; when events after N are no
    /// longer held, an `event: gap` message says how many were missed first.
    /// Without either, the stream starts with new events (`?since=0`: everything held).
    /// `?max_seconds=N` ends the stream after N seconds (for clients and proxies that
    /// prefer finite responses; an `EventSource` reconnects by itself and resumes).
    func eventStream(_ request: Request) throws -> Response {
        let query = try QueryParameters(request, known: ["since", "max_seconds"])
        let maxSeconds = try query.int("max_seconds")
        if let maxSeconds, !(1...86_400).contains(maxSeconds) {
            throw APIError.badRequest("query parameter \"max_seconds\" must be 1 to 86400, got \(maxSeconds)")
        }
        var since = events.lastID
        if let header = request.headers[HTTPField.Name("Last-Event-ID")!] {
            guard let value = Int(header.trimmingCharacters(in: .whitespaces)), value >= 0 else {
                throw APIError.badRequest(
                    "Last-Event-ID must be an event id (an integer), got \"\(header.prefix(80))\""
                )
            }
            since = value
        } else if let value = try query.int("since") {
            guard value >= 0 else { throw APIError.badRequest("query parameter \"since\" must be 0 or more") }
            since = value
        }
        let events = self.events
        let start = since
        // Subscribed before the first read, so nothing appended in between is missed.
        let (wakeUps, end) = events.wakeUps()
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                // With max_seconds the stream ends then (the client reconnects with
                // Last-Event-ID and loses nothing).
                let deadline = maxSeconds.map { seconds in
                    Task {
                        try? await Task.sleep(for: .seconds(seconds))
                        end()
                    }
                }
                defer { deadline?.cancel() }
                var last = start
                let encoder = ControlJSON.encoder()
                try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
                var first = true
                var iterator = wakeUps.makeAsyncIterator()
                while true {
                    let (batch, missed) = events.entries(after: last)
                    defer { first = false }
                    var text = ""
                    if missed > 0 {
                        text += "event: gap\ndata: {\"missed\":\(missed)}\n\n"
                    }
                    for entry in batch {
                        let data = try encoder.encode(NodeEvent(entry))
                        text += "id: \(entry.id)\ndata: \(String(decoding: data, as: UTF8.self))\n\n"
                        last = entry.id
                    }
                    if missed > 0 && batch.isEmpty { last = events.lastID }
                    // Nothing new: a keep-alive tick; a comment line keeps proxies open and
                    // notices a client that went away.
                    if !text.isEmpty || !first {
                        try await writer.write(ByteBuffer(string: text.isEmpty ? ": keep-alive\n\n" : text))
                    }
                    guard await iterator.next() != nil else { break }
                }
                try await writer.finish(nil)
            }
        )
    }
}
