/// A topic message (frame type 6): one signed publication on a topic, pushed along
/// the topic mesh and served on request (IWANT). The origin signs the ID, its peer ID,
/// the lifetime, the topic and the payload, and in format 2 (frame flag `0x0001`) its
/// publication time; relays change only the hop budget (`ttl`) and the age, which are
/// not signed. Layout and rules in `docs/PROTOCOL.md` §A.7.
package struct TopicMessageFrame: Sendable, Hashable {
    /// The message's identity, chosen at random by its origin.
    package var id: MessageID
    /// The node that published it (and signed it).
    package var origin: PeerID
    /// Hops the message may still take (not signed).
    package var ttl: UInt8
    /// Milliseconds since publication, added up by the nodes that held it (not signed).
    package var ageMillis: UInt32
    /// Seconds after publication at which the message expires (signed).
    package var lifetimeSeconds: UInt32
    /// The topic.
    package var topic: String
    /// The message's bytes.
    package var payload: [UInt8]
    /// The origin's 64-byte signature over ``signedBytes``.
    package var signature: [UInt8]
    /// When the origin published it, in milliseconds since 1970 (UTC), signed;
    /// nil in format 1, which carries no publication time.
    package var publishedMillis: UInt64?

    /// Domain separation for the signed bytes of format 1 (15 ASCII bytes).
    package static let domain = Array("SCMesh topic v1".utf8)
    /// Domain separation for the signed bytes of format 2, with the publication time.
    package static let timedDomain = Array("SCMesh topic v2".utf8)
    /// The frame flag of format 2: the publication time follows the lifetime.
    package static let timedFlag: UInt16 = 0x0001
    /// Body bytes besides the topic and the payload.
    package static let fixedSize = 16 + 32 + 1 + 4 + 4 + 1 + 4 + 64
    /// The largest payload a topic message carries (one frame, never chunked).
    package static let maxPayload = 60_000

    /// Creates a topic message frame.
    package init(
        id: MessageID,
        origin: PeerID,
        ttl: UInt8,
        ageMillis: UInt32,
        lifetimeSeconds: UInt32,
        topic: String,
        payload: [UInt8],
        signature: [UInt8],
        publishedMillis: UInt64? = nil
    ) {
        self.id = id
        self.origin = origin
        self.ttl = ttl
        self.ageMillis = ageMillis
        self.lifetimeSeconds = lifetimeSeconds
        self.topic = topic
        self.payload = payload
        self.signature = signature
        self.publishedMillis = publishedMillis
    }

    /// The frame flags: ``timedFlag`` in format 2.
    package var flags: UInt16 { publishedMillis == nil ? 0 : Self.timedFlag }

    /// The bytes the origin signs: domain, ID, origin, (format 2: publication time,
    /// u64), lifetime (u32), topic length (u8), topic, payload length (u32), payload.
    package var signedBytes: [UInt8] {
        let topicBytes = Array(topic.utf8)
        var writer = ByteWriter(capacity: Self.domain.count + 66 + topicBytes.count + payload.count)
        writer.write(contentsOf: publishedMillis == nil ? Self.domain : Self.timedDomain)
        writer.write(id.high)
        writer.write(id.low)
        writer.write(contentsOf: origin.bytes)
        if let publishedMillis { writer.write(publishedMillis) }
        writer.write(lifetimeSeconds)
        writer.write(UInt8(topicBytes.count))
        writer.write(contentsOf: topicBytes)
        writer.write(UInt32(payload.count))
        writer.write(contentsOf: payload)
        return writer.bytes
    }

    /// Whether the origin's signature verifies.
    package func verify(with signer: any ReceiptSigner) -> Bool {
        signature.count == 64 && signer.verify(signature, of: signedBytes, by: origin)
    }

    func write(to writer: inout ByteWriter) {
        let topicBytes = Array(topic.utf8)
        writer.write(id.high)
        writer.write(id.low)
        writer.write(contentsOf: origin.bytes)
        writer.write(ttl)
        writer.write(ageMillis)
        writer.write(lifetimeSeconds)
        if let publishedMillis { writer.write(publishedMillis) }
        writer.write(UInt8(topicBytes.count))
        writer.write(contentsOf: topicBytes)
        writer.write(UInt32(payload.count))
        writer.write(contentsOf: payload)
        writer.write(contentsOf: signature)
    }

    var encodedSize: Int { Self.fixedSize + (publishedMillis == nil ? 0 : 8) + topic.utf8.count + payload.count }

    static func read(from reader: inout ByteReader, flags: UInt16 = 0) throws(MeshError) -> TopicMessageFrame {
        let high = try reader.readInteger(UInt64.self, field: "message id")
        let low = try reader.readInteger(UInt64.self, field: "message id")
        let origin = try PeerID(bytes: reader.readBytes(32, field: "origin"))
        let ttl = try reader.readInteger(UInt8.self, field: "ttl")
        let age = try reader.readInteger(UInt32.self, field: "age")
        let lifetime = try reader.readInteger(UInt32.self, field: "lifetime")
        var published: UInt64?
        if flags & timedFlag != 0 { published = try reader.readInteger(UInt64.self, field: "publication time") }
        let topic = try readTopic(from: &reader, context: "topic message", allowEmpty: false)
        let length = try reader.readInteger(UInt32.self, field: "payload length")
        guard Int(length) <= maxPayload else {
            throw MeshError(
                .frameTooLarge,
                "topic message: payload of \(length) bytes exceeds the \(maxPayload)-byte limit"
            )
        }
        let payload = Array(try reader.readBytes(Int(length), field: "payload"))
        let signature = Array(try reader.readBytes(64, field: "signature"))
        guard reader.remaining == 0 else {
            throw MeshError(.malformedFrame, "topic message: \(reader.remaining) trailing bytes")
        }
        return TopicMessageFrame(
            id: MessageID(high: high, low: low),
            origin: origin,
            ttl: ttl,
            ageMillis: age,
            lifetimeSeconds: lifetime,
            topic: topic,
            payload: payload,
            signature: signature,
            publishedMillis: published
        )
    }
}

/// A topic control frame (frame type 7): one subscription announcement, mesh change
/// (GRAFT / PRUNE) or lazy-repair message (IHAVE / IWANT). Layout in
/// `docs/PROTOCOL.md` §A.7.
package struct TopicControlFrame: Sendable, Hashable {
    /// What the frame says.
    package enum Body: Sendable, Hashable {
        /// The sender takes part in `topic`: `distance` 0 when it is subscribed itself,
        /// otherwise the hops from it to the nearest subscriber it knows of.
        case subscribe(distance: UInt8)
        /// The sender no longer takes part in `topic`.
        case unsubscribe
        /// The sender added the receiver to its mesh for `topic`.
        case graft
        /// The sender removed the receiver from its mesh for `topic`; the receiver
        /// must not graft it again for `backoffSeconds`.
        case prune(backoffSeconds: UInt16)
        /// The sender holds these messages of `topic`.
        case ihave([MessageID])
        /// The sender asks for these messages (any topic; `topic` is empty).
        case iwant([MessageID])
    }

    /// The topic concerned (empty only in IWANT).
    package var topic: String
    /// What is said about it.
    package var body: Body

    /// The most message IDs one IHAVE or IWANT carries.
    package static let maxIDs = 1024

    /// Creates a control frame.
    package init(topic: String, body: Body) {
        self.topic = topic
        self.body = body
    }

    enum Code: UInt8 {
        case subscribe = 1
        case unsubscribe, graft, prune, ihave, iwant
    }

    func write(to writer: inout ByteWriter) {
        let code: Code
        switch body {
        case .subscribe: code = .subscribe
        case .unsubscribe: code = .unsubscribe
        case .graft: code = .graft
        case .prune: code = .prune
        case .ihave: code = .ihave
        case .iwant: code = .iwant
        }
        writer.write(code.rawValue)
        let topicBytes = Array(topic.utf8)
        writer.write(UInt8(topicBytes.count))
        writer.write(contentsOf: topicBytes)
        switch body {
        case .subscribe(let distance): writer.write(distance)
        case .unsubscribe, .graft: break
        case .prune(let backoff): writer.write(backoff)
        case .ihave(let ids), .iwant(let ids):
            writer.write(UInt16(ids.count))
            for id in ids {
                writer.write(id.high)
                writer.write(id.low)
            }
        }
    }

    var encodedSize: Int {
        let base = 2 + topic.utf8.count
        switch body {
        case .subscribe: return base + 1
        case .unsubscribe, .graft: return base
        case .prune: return base + 2
        case .ihave(let ids), .iwant(let ids): return base + 2 + 16 * ids.count
        }
    }

    static func read(from reader: inout ByteReader) throws(MeshError) -> TopicControlFrame {
        let raw = try reader.readInteger(UInt8.self, field: "control kind")
        guard let code = Code(rawValue: raw) else {
            throw MeshError(.malformedFrame, "topic control: unknown kind \(raw)")
        }
        let topic = try readTopic(from: &reader, context: "topic control", allowEmpty: code == .iwant)
        let body: Body
        switch code {
        case .subscribe: body = .subscribe(distance: try reader.readInteger(UInt8.self, field: "distance"))
        case .unsubscribe: body = .unsubscribe
        case .graft: body = .graft
        case .prune: body = .prune(backoffSeconds: try reader.readInteger(UInt16.self, field: "backoff"))
        case .ihave, .iwant:
            let count = try reader.readInteger(UInt16.self, field: "id count")
            guard Int(count) <= maxIDs else {
                throw MeshError(.malformedFrame, "topic control: \(count) message IDs exceed the limit of \(maxIDs)")
            }
            guard reader.remaining == Int(count) * 16 else {
                throw MeshError(
                    .malformedFrame,
                    "topic control: declares \(count) IDs but \(reader.remaining) bytes follow"
                )
            }
            var ids: [MessageID] = []
            ids.reserveCapacity(Int(count))
            for _ in 0..<count {
                let high = try reader.readInteger(UInt64.self, field: "message id")
                let low = try reader.readInteger(UInt64.self, field: "message id")
                ids.append(MessageID(high: high, low: low))
            }
            body = code == .ihave ? .ihave(ids) : .iwant(ids)
        }
        guard reader.remaining == 0 else {
            throw MeshError(.malformedFrame, "topic control: \(reader.remaining) trailing bytes")
        }
        return TopicControlFrame(topic: topic, body: body)
    }
}

/// Reads a topic name (length byte, then the name), checking the naming rule.
private func readTopic(from reader: inout ByteReader, context: String, allowEmpty: Bool) throws(MeshError) -> String {
    let length = try reader.readInteger(UInt8.self, field: "topic length")
    let bytes = try reader.readBytes(Int(length), field: "topic")
    if bytes.isEmpty && allowEmpty { return "" }
    guard let name = String(validating: bytes, as: UTF8.self) else {
        throw MeshError(.malformedFrame, "\(context): the topic is not UTF-8")
    }
    if let problem = TopicName.problem(with: name) {
        throw MeshError(.malformedFrame, "\(context): \(problem)")
    }
    return name
}
