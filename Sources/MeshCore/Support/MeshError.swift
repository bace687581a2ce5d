/// The one error type of MeshCore: a code to switch on, a message that says what
/// happened and what to do, and an optional underlying cause.
public struct MeshError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Extensible: new codes are not an API break.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        public let name: String
        /// Creates a code; transports may define their own.
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A caller passed a value the API cannot accept.
        public static let invalidArgument = Code("invalidArgument")
        /// Bytes from the network did not parse as a frame.
        public static let malformedFrame = Code("malformedFrame")
        /// A frame is larger than the limit of the link or of the protocol.
        public static let frameTooLarge = Code("frameTooLarge")
        /// The link is closed (by either end, or because it failed).
        public static let linkClosed = Code("linkClosed")
        /// A dial did not reach a listening peer.
        public static let dialFailed = Code("dialFailed")
        /// The transport cannot run here (missing daemon, kernel feature, adapter).
        public static let transportUnavailable = Code("transportUnavailable")
        /// No live link and no relay can reach the peer.
        public static let noRoute = Code("noRoute")
        /// Every candidate link was tried and none acknowledged in time.
        public static let deliveryFailed = Code("deliveryFailed")
        /// The hop acknowledgement did not arrive within the adaptive timeout.
        public static let ackTimeout = Code("ackTimeout")
        /// The link handshake failed or the remote could not prove its identity.
        public static let handshakeFailed = Code("handshakeFailed")
        /// Relaying is switched off, so the node neither sends nor receives.
        public static let relayDisabled = Code("relayDisabled")
        /// The message is larger than the configured maximum message size.
        public static let messageTooLarge = Code("messageTooLarge")
        /// The component was stopped or not started.
        public static let notRunning = Code("notRunning")
        /// A configuration value is wrong.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// A wait ended before what it waited for happened (the operation itself may
        /// still complete: a queued message stays queued).
        public static let timedOut = Code("timedOut")
        /// A ``MessageSink`` took a message and discarded it on purpose (a blocked
        /// sender, say): the router acknowledges the hop, so the sender does not retry,
        /// but returns no delivery receipt, so the sender never sees it delivered.
        public static let discarded = Code("discarded")
        /// No message with this ID is known to the outbound queue.
        public static let unknownMessage = Code("unknownMessage")
        /// A rate limit refused the operation (e.g. this node's emergency messages per
        /// hour, `flood.emergency_per_hour`); try again later or without the flag.
        public static let rateLimited = Code("rateLimited")
        /// A sealed envelope of format 1 (it binds neither the frame's ID nor its flags)
        /// from an origin known to seal format 2: a replay (docs/PROTOCOL.md §B.3).
        public static let envelopeDowngraded = Code("envelopeDowngraded")
        /// A sealed envelope of a format this node does not announce (`sealed_v2`).
        public static let envelopeFormatUnsupported = Code("envelopeFormatUnsupported")
    }

    /// The failure's code.
    public var code: Code
    /// A human-readable, one-line account of what happened and what to do.
    public var message: String
    /// The underlying error, if any.
    public var cause: (any Error)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String {
        if let cause { return "\(message) (\(code); cause: \(cause))" }
        return "\(message) (\(code))"
    }
}
