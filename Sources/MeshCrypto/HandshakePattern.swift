/// A Noise handshake pattern (specification rev 34, section 7): the pre-messages and
/// the token lists of each message. ``HandshakeState`` drives every message from
/// these tokens, so a pattern is data, not code.
public struct HandshakePattern: Sendable, Hashable, CustomStringConvertible {
    /// One token of a message pattern.
    public enum Token: String, Sendable, Hashable {
        /// Send or receive an ephemeral public key.
        case e
        /// Send or receive a static public key (encrypted once a key exists).
        case s
        /// DH(ephemeral, remote ephemeral).
        case ee
        /// DH between the initiator's ephemeral and the responder's static key.
        case es
        /// DH between the initiator's static and the responder's ephemeral key.
        case se
        /// DH(static, remote static).
        case ss
        /// Mix in the next pre-shared key.
        case psk
    }

    /// The pattern's name, with modifiers: `"XX"`, `"XXpsk3"`.
    public let name: String
    /// Tokens the initiator's pre-message holds (keys the responder knows beforehand).
    public let initiatorPreMessage: [Token]
    /// Tokens the responder's pre-message holds (keys the initiator knows beforehand).
    public let responderPreMessage: [Token]
    /// The messages in order; even indices go initiator to responder.
    public let messages: [[Token]]

    /// Creates a pattern from its parts.
    public init(name: String, initiatorPreMessage: [Token] = [], responderPreMessage: [Token] = [], messages: [[Token]])
    {
        self.name = name
        self.initiatorPreMessage = initiatorPreMessage
        self.responderPreMessage = responderPreMessage
        self.messages = messages
    }

    /// The name.
    public var description: String { name }

    /// Whether the pattern uses pre-shared keys (then an `e` token also mixes the key).
    public var usesPreSharedKeys: Bool { messages.contains { $0.contains(.psk) } }

    /// Whether only the initiator sends (N, K, X): the responder-to-initiator cipher
    /// after Split is unused.
    public var isOneWay: Bool { messages.count == 1 }

    /// NN: no static keys.
    public static let nn = HandshakePattern(name: "NN", messages: [[.e], [.e, .ee]])
    /// XX: both static keys transmitted, mutual authentication (the SCMesh link pattern).
    public static let xx = HandshakePattern(name: "XX", messages: [[.e], [.e, .ee, .s, .es], [.s, .se]])
    /// X: one-way, the sender's static key transmitted to a known recipient.
    public static let x = HandshakePattern(name: "X", responderPreMessage: [.s], messages: [[.e, .es, .s, .ss]])
    /// N: one-way, anonymous sender to a known recipient.
    public static let n = HandshakePattern(name: "N", responderPreMessage: [.s], messages: [[.e, .es]])
    /// K: one-way, both static keys known beforehand.
    public static let k = HandshakePattern(
        name: "K",
        initiatorPreMessage: [.s],
        responderPreMessage: [.s],
        messages: [[.e, .es, .ss]]
    )
    /// NK: anonymous initiator, known responder.
    public static let nk = HandshakePattern(name: "NK", responderPreMessage: [.s], messages: [[.e, .es], [.e, .ee]])
    /// NX: anonymous initiator, responder's static transmitted.
    public static let nx = HandshakePattern(name: "NX", messages: [[.e], [.e, .ee, .s, .es]])
    /// XN: initiator's static transmitted, anonymous responder.
    public static let xn = HandshakePattern(name: "XN", messages: [[.e], [.e, .ee], [.s, .se]])
    /// XK: initiator's static transmitted, responder known.
    public static let xk = HandshakePattern(
        name: "XK",
        responderPreMessage: [.s],
        messages: [[.e, .es], [.e, .ee], [.s, .se]]
    )
    /// KN: initiator known, anonymous responder.
    public static let kn = HandshakePattern(name: "KN", initiatorPreMessage: [.s], messages: [[.e], [.e, .ee, .se]])
    /// KK: both static keys known beforehand.
    public static let kk = HandshakePattern(
        name: "KK",
        initiatorPreMessage: [.s],
        responderPreMessage: [.s],
        messages: [[.e, .es, .ss], [.e, .ee, .se]]
    )
    /// KX: initiator known, responder's static transmitted.
    public static let kx = HandshakePattern(
        name: "KX",
        initiatorPreMessage: [.s],
        messages: [[.e], [.e, .ee, .se, .s, .es]]
    )
    /// IN: initiator's static sent immediately, anonymous responder.
    public static let `in` = HandshakePattern(name: "IN", messages: [[.e, .s], [.e, .ee, .se]])
    /// IK: initiator's static sent immediately to a known responder.
    public static let ik = HandshakePattern(
        name: "IK",
        responderPreMessage: [.s],
        messages: [[.e, .es, .s, .ss], [.e, .ee, .se]]
    )
    /// IX: initiator's static sent immediately, responder's transmitted.
    public static let ix = HandshakePattern(name: "IX", messages: [[.e, .s], [.e, .ee, .se, .s, .es]])

    /// The fundamental patterns this table holds.
    public static let fundamental: [HandshakePattern] = [
        .n, .k, .x, .nn, .nk, .nx, .xn, .xk, .xx, .kn, .kk, .kx, .in, .ik, .ix,
    ]

    /// Parses a pattern name with optional `pskN` modifiers joined by `+`
    /// (`"XX"`, `"XXpsk3"`, `"NNpsk0+psk2"`); nil for an unknown pattern or modifier.
    public init?(name: String) {
        let letters = String(name.prefix { $0.isUppercase })
        guard let base = Self.fundamental.first(where: { $0.name == letters }) else { return nil }
        var messages = base.messages
        let modifierText = name.dropFirst(letters.count)
        if !modifierText.isEmpty {
            for modifier in modifierText.split(separator: "+", omittingEmptySubsequences: false) {
                guard modifier.hasPrefix("psk"), let position = Int(modifier.dropFirst(3)),
                    position >= 0, position <= messages.count
                else { return nil }
                if position == 0 {
                    messages[0].insert(.psk, at: 0)
                } else {
                    messages[position - 1].append(.psk)
                }
            }
        }
        self.init(
            name: name,
            initiatorPreMessage: base.initiatorPreMessage,
            responderPreMessage: base.responderPreMessage,
            messages: messages
        )
    }
}
