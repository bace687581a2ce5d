/// Counters for one transport.
public struct TransportCounters: Sendable, Hashable, Codable {
    /// Data frames acknowledged by the next hop on this transport.
    public var framesSent = 0
    /// Data frames received on this transport.
    public var framesReceived = 0
    /// Payload bytes acknowledged by the next hop.
    public var bytesSent = 0
    /// Payload bytes received.
    public var bytesReceived = 0
    /// Frames that failed here (error or ack timeout) and were escalated.
    public var failures = 0
    /// Times traffic to a peer moved away from this transport to a worse one.
    public var escalationsFrom = 0
    /// Times traffic to a peer moved back to this transport from a worse one.
    public var deEscalationsTo = 0
    /// Links that completed a handshake.
    public var linksOpened = 0

    /// Zero counters.
    public init() {}
}

/// The router's counters.
public struct RouterStats: Sendable, Hashable, Codable {
    /// Messages this node originated and the next hop acknowledged.
    public var messagesSent = 0
    /// Messages delivered to this node's inbox.
    public var messagesReceived = 0
    /// Duplicate messages or chunks dropped.
    public var duplicatesDropped = 0
    /// Frames retried on another link after an error or timeout.
    public var retries = 0
    /// Ack timeouts.
    public var ackTimeouts = 0
    /// Path changes to a less preferred transport.
    public var escalations = 0
    /// Path changes back to a more preferred transport.
    public var deEscalations = 0
    /// Links that completed a handshake.
    public var linksOpened = 0
    /// Links that ended.
    public var linksClosed = 0
    /// Duplicate links (both ends dialled) closed by the tie-break.
    public var duplicateLinksClosed = 0
    /// Handshakes that failed.
    public var handshakeFailures = 0
    /// Inbound links closed before their handshake finished because the budget of
    /// unauthenticated links was full (the oldest goes).
    public var unauthenticatedLinksEvicted = 0
    /// Links closed because their remote stopped reading: a write waited
    /// `link_write_stall_timeout_ms` with none finishing.
    public var writeStalledLinksClosed = 0
    /// Handshake failures by reason code (`badSignature`, `peerMismatch`, ...).
    public var handshakeFailuresByReason: [String: Int] = [:]
    /// Messages whose end-to-end seal did not open, by reason code; never delivered.
    public var sealedMessagesRejected: [String: Int] = [:]
    /// Inputs rejected as malformed (bad packets, frames, or failed decryption), by code.
    public var malformedInputs: [String: Int] = [:]
    /// Inbound frames ignored, by type (docs/PROTOCOL.md §A.11): a type this release
    /// does not know (`type_N`), or one of a feature that this node switched off or its
    /// sender did not announce (`announce`, `topic_message`, ...; `receipt`, `flood`,
    /// `emergency` for DATA flags cleared or a receipt dropped). Never a reason to close
    /// the link.
    public var framesIgnored: [String: Int] = [:]
    /// Outbound frames not sent because the link's remote did not announce their
    /// feature (or this node switched it off), by type; `receipt` for receipts withheld.
    public var framesWithheld: [String: Int] = [:]
    /// Inbound data frames refused (relay off, not for us, reassembly limits, sink refused).
    public var framesRefused = 0
    /// Complete messages the message sink refused (not acknowledged; the sender retries).
    public var sinkRefusals = 0
    /// Complete messages the message sink discarded on purpose (`MeshError.Code.discarded`:
    /// acknowledged, no receipt).
    public var sinkDiscards = 0
    /// Failed send attempts after which a message stayed queued for a retry.
    public var deliveryRetries = 0
    /// Delivery receipts this node returned (the next hop took them).
    public var receiptsSent = 0
    /// Valid receipts that made a message from this node delivered.
    public var receiptsAccepted = 0
    /// Receipts rejected, by reason (`malformed`, `notFromDestination`,
    /// `badSignature`, `digestMismatch`).
    public var receiptsRejected: [String: Int] = [:]
    /// Receipts ignored, by reason (`unknownMessage`, `alreadyDelivered`, `finished`).
    public var receiptsIgnored: [String: Int] = [:]
    /// Route announcements written to links (this node's own and re-announced ones).
    public var announcesSent = 0
    /// Announcements that became a route (newer, or shorter at the same sequence).
    public var announcesAccepted = 0
    /// Valid announcements not used: the route held is as new and no longer.
    public var announcesIgnored = 0
    /// Re-announcements not queued for a neighbour because it had already told this
    /// node of the same sequence at least as short (docs/PROTOCOL.md §A.5).
    public var announcesSuppressed = 0
    /// Shortcuts: this node's route sent to a neighbour whose announcement of the same
    /// sequence showed it more than one hop farther from the origin than this node
    /// (docs/PROTOCOL.md §A.5, ANNOUNCE send rule 5).
    public var shortcutsOffered = 0
    /// Announcements rejected, by reason: `rateLimited` (over the neighbour's share of
    /// the link, dropped unread), `aboutSelf`, `hopLimit`, `badSignature`, `stale`
    /// (an older sequence than one already accepted), `tableFull`, `noVerifier`.
    public var announcesRejected: [String: Int] = [:]
    /// Route requests (docs/PROTOCOL.md §A.5), by what happened: `sent` (written to a
    /// link, this node's own and forwarded ones), `asked` (this node asked its
    /// neighbours for a route it lacked), `answered` (a route it held was sent back),
    /// `forwarded` (passed on toward the target), `reannounced` (it was the target
    /// and announced itself anew), `dropped` (no route to answer or forward with, a
    /// repeat, or the hop limit), `rateLimited` (over the neighbour's share); and of
    /// the solicited announcements answering them: `returned` (passed back to a
    /// neighbour whose request this node forwarded), `withheld` (not passed to a
    /// neighbour that did not ask, the route here unchanged; one per neighbour).
    public var routeRequests: [String: Int] = [:]
    /// Route summaries (docs/PROTOCOL.md §A.5, "Route summaries"), by what happened:
    /// `sent` (written to a link), `matched` (a neighbour's summary showed nothing
    /// missing on either side), `listed` (it differed: a listing of the differing
    /// buckets went back), `repaired` (announcements sent because a neighbour's
    /// listing lacked them), `expanded` (a differing digest got the full summary back),
    /// `hopsSent` (hop counts sent to a neighbour whose summary matched, at its first
    /// two such summaries), `hopsCompared`, `hopsStale` and `hopsRepeated` (a neighbour's hop
    /// counts compared with this node's table, or ignored as of another table or as a
    /// repeat on the same link), `hopShortcuts` (routes
    /// sent because a neighbour's hop counts showed them shorter), `dropped` (relaying
    /// off), `rateLimited` (over the neighbour's share).
    public var routeSummaries: [String: Int] = [:]
    /// Messages for other nodes this node took custody of (queued to relay them).
    public var relayAccepted = 0
    /// Messages for other nodes that this node handed to the next hop.
    public var messagesRelayed = 0
    /// Messages for other nodes refused (not acknowledged), by reason: `relayOff`,
    /// `ttlExhausted`, `unsealed`, `loop`, `queueRefused`, and the budgets' `budget`,
    /// `neighbourShare`, `batteryLow`.
    public var relayRefused: [String: Int] = [:]
    /// Payload bytes of the messages counted in ``messagesRelayed`` (sealed, as carried).
    public var bytesRelayed = 0
    /// Distinct peers this router had an authenticated link with since it started
    /// (the seed app's "peers discovered"); counted up to 1,048,576.
    public var peersMet = 0
    /// Address records (docs/PROTOCOL.md §A.8) from neighbours that verified.
    public var addressRecordsAccepted = 0
    /// Address records ignored, by reason: `notFromRemote` (about another node),
    /// `badSignature`, `rateLimited` (more than a few on one link), `noVerifier`.
    public var addressRecordsRejected: [String: Int] = [:]
    /// Dials to a neighbour's advertised address over a transport ranked above every
    /// link to it (moving it up from a slow transport).
    public var upgradeDials = 0
    /// Topic gossip (publish/subscribe).
    public var topics = TopicCounters()
    /// The flooding fallback and emergency messages.
    public var flood = FloodCounters()
    /// Per transport.
    public var transports: [String: TransportCounters] = [:]

    /// Zero counters.
    public init() {}
}
