import Foundation
import GRDB
import Glibc
import MeshCore

extension StoreInbox {
    /// The start of the name of a received payload's file in the payload directory.
    static let filePrefix = "inbox-"

    /// Whether the dedup log already holds `id` from `origin` (read-only: the write
    /// transaction checks again).
    func isKnown(_ id: MessageID, from origin: PeerID) async throws(MeshError) -> Bool {
        try await database.read("look up message \(id.hex) in the dedup log") { db in
            try DedupLog.contains(db, id, from: origin)
        }
    }

    /// The entry of `row`, with its payload read from its file when it has one; nil
    /// when the file is gone because the row was deleted meanwhile (consumed while
    /// being listed).
    /// - Throws: `.storeCorrupt` when a row that still exists names a missing or
    ///   short file.
    func entry(_ row: InboxRow) async throws(MeshError) -> Entry? {
        var payload = Array(row.payload)
        if let name = row.payloadFile {
            let files = database.payloadFiles
            do {
                payload = try await OutboxPayloadFiles.offThread { () throws(MeshError) in
                    try files.read(name, bytes: row.bytes)
                }
            } catch {
                guard try await stillHolds(row) else { return nil }
                throw error
            }
        }
        return Entry(
            sequence: Int(row.sequence ?? 0),
            receivedAt: Millis.date(row.receivedAt),
            message: InboundMessage(
                id: try Self.stored(MessageID.stored, row.messageID),
                from: try Self.stored(PeerID.stored, row.sender),
                payload: payload,
                transport: row.transport,
                topic: row.topic,
                emergency: row.emergency != 0,
                sentMillis: row.sentAt.flatMap { UInt64(exactly: $0) }
            )
        )
    }

    private static func stored<T>(_ parse: (String) throws -> T, _ text: String) throws(MeshError) -> T {
        do {
            return try parse(text)
        } catch let error as MeshError {
            throw error
        } catch {
            throw MeshError(.storeCorrupt, "the store holds a malformed value \"\(text)\"")
        }
    }

    private func stillHolds(_ row: InboxRow) async throws(MeshError) -> Bool {
        try await database.read("read inbox entry \(row.sequence ?? 0)") { db in
            try Bool.fetchOne(
                db,
                sql: "SELECT EXISTS (SELECT 1 FROM inbox WHERE sequence = ?)",
                arguments: [row.sequence]
            ) ?? false
        }
    }

    /// Deletes the inbox rows matching `condition` (with one argument); returns their
    /// payload files, to remove once the transaction is committed.
    static func deleteRows(_ db: Database, where condition: String, _ argument: Int64) throws -> [String] {
        try PayloadRows.delete(db, from: "inbox", where: condition, argument)
    }

    /// The payload files inbox rows name (for ``OutboxPayloadFiles/removeOrphans(keeping:)``).
    static func payloadFileNames(_ db: Database) throws -> Set<String> {
        try PayloadRows.fileNames(db, in: "inbox")
    }

    /// The payload of one entry, for a download: in memory when it is in its row,
    /// else its file opened for reading (open, it stays readable even when the entry
    /// is removed meanwhile).
    public struct Payload: Sendable {
        /// The entry's sequence number.
        public var sequence: Int
        /// The message's ID.
        public var id: MessageID
        /// Its sender.
        public var from: PeerID
        /// The payload's size in bytes.
        public var byteCount: Int
        /// Where the bytes are.
        public var source: Source

        /// Where a payload's bytes are.
        public enum Source: Sendable {
            /// In memory (a small payload, kept in its row).
            case bytes([UInt8])
            /// In a file of the payload directory.
            case file(InboxPayloadFile)
        }
    }

    /// The payload of the entry with sequence number `sequence`, or nil when the inbox
    /// holds none. A large payload is not read: its file is opened, to be read in
    /// pieces (``InboxPayloadFile/read(at:upTo:)``).
    /// - Throws: `.storeCorrupt` when the entry's file is missing.
    public func payload(sequence: Int) async throws(MeshError) -> Payload? {
        guard sequence >= 1 else { return nil }
        let row = try await database.read("read inbox entry \(sequence)") { db in
            try InboxRow.fetchOne(db, sql: "SELECT * FROM inbox WHERE sequence = ?", arguments: [sequence])
        }
        guard let row else { return nil }
        let source: Payload.Source
        if row.payloadFile != nil {
            guard let file = try await openFile(of: row) else { return nil }
            source = .file(file)
        } else {
            source = .bytes(Array(row.payload))
        }
        return Payload(
            sequence: sequence,
            id: try Self.stored(MessageID.stored, row.messageID),
            from: try Self.stored(PeerID.stored, row.sender),
            byteCount: row.bytes,
            source: source
        )
    }

    /// The payload file of `row` (which names one), open for reading; nil when it is
    /// gone because the row was deleted meanwhile.
    /// - Throws: `.storeCorrupt` when a row that still exists names a missing file.
    private func openFile(of row: InboxRow) async throws(MeshError) -> InboxPayloadFile? {
        let path = database.payloadFiles.directory + "/" + (row.payloadFile ?? "")
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            guard try await stillHolds(row) else { return nil }
            throw MeshError(
                .storeCorrupt,
                "the payload file \(path) of inbox entry \(row.sequence ?? 0) is missing or unreadable (\(String(cString: strerror(code))))"
            )
        }
        return InboxPayloadFile(descriptor: descriptor, path: path, byteCount: row.bytes)
    }

    /// One entry as a listing without payloads shows it: its size, and of its payload
    /// only what costs no file read beyond a few bytes — all of it when it is kept in
    /// its row (under ``StoreConfiguration/inboxFileThreshold``, read with the row
    /// anyway), its first bytes when it is kept in a file.
    public struct Summary: Sendable, Hashable {
        /// The entry's sequence number.
        public var sequence: Int
        /// When the node received it.
        public var receivedAt: Date
        /// The message's ID.
        public var id: MessageID
        /// Its sender.
        public var from: PeerID
        /// The transport it arrived on.
        public var transport: String
        /// The topic of a topic message; nil for a direct message.
        public var topic: String?
        /// Whether its origin sent it as an emergency.
        public var emergency: Bool
        /// The payload's size in bytes.
        public var byteCount: Int
        /// When the sender sealed it, as its envelope says; nil when unknown.
        public var sentAt: Date? = nil
        /// The whole payload when it is kept in its row, else its first bytes (as many
        /// as ``StoreInbox/summaries(after:limit:headBytes:)`` was asked for).
        public var head: [UInt8]

        /// Whether ``head`` is the whole payload.
        public var isWhole: Bool { head.count == byteCount }
    }

    /// Messages with a sequence number above `after`, oldest first, at most `limit`
    /// (the newest ones when there are more), as ``entries(after:limit:)`` lists them
    /// but without reading a payload kept in a file: of those, only the first
    /// `headBytes` bytes are read.
    /// - Throws: ``MeshError`` when the store cannot be read; `.storeCorrupt` when a
    ///   row names a missing or short file.
    /// - Parameter unread: only messages not yet marked read.
    public func summaries(
        after: Int = 0,
        limit: Int = .max,
        headBytes: Int,
        unread: Bool = false
    ) async throws(MeshError) -> [Summary] {
        let limit = max(0, limit)
        let rows = try await database.read("read the inbox") { db in
            try InboxRow.fetchAll(
                db,
                sql:
                    "SELECT * FROM inbox WHERE sequence > ? \(Self.unreadCondition(unread)) ORDER BY sequence DESC LIMIT ?",
                arguments: [after, limit == .max ? -1 : limit]
            )
        }
        var summaries: [Summary] = []
        for row in rows.reversed() {
            var head = Array(row.payload)
            if row.payloadFile != nil {
                guard let file = try await openFile(of: row) else { continue }  // removed while listed
                head = try await file.read(at: 0, upTo: max(0, headBytes))
            }
            summaries.append(
                Summary(
                    sequence: Int(row.sequence ?? 0),
                    receivedAt: Millis.date(row.receivedAt),
                    id: try Self.stored(MessageID.stored, row.messageID),
                    from: try Self.stored(PeerID.stored, row.sender),
                    transport: row.transport,
                    topic: row.topic,
                    emergency: row.emergency != 0,
                    byteCount: row.bytes,
                    sentAt: row.sentAt.map(Millis.date),
                    head: head
                )
            )
        }
        return summaries
    }
}

/// A received payload's file, open for reading; closed when the last reference goes.
public final class InboxPayloadFile: Sendable {
    private let descriptor: Int32
    /// The file's path (for messages).
    public let path: String
    /// The payload's size in bytes, as its inbox row says.
    public let byteCount: Int

    init(descriptor: Int32, path: String, byteCount: Int) {
        self.descriptor = descriptor
        self.path = path
        self.byteCount = byteCount
    }

    deinit {
        close(descriptor)
    }

    /// Up to `count` bytes from `offset` (off the caller's thread); fewer only at the
    /// payload's end.
    /// - Throws: `.storeCorrupt` when the file ends before ``byteCount``; `.storeFailed`
    ///   on a read error.
    public func read(at offset: Int, upTo count: Int) async throws(MeshError) -> [UInt8] {
        let wanted = max(0, min(count, byteCount - offset))
        guard wanted > 0 else { return [] }
        return try await OutboxPayloadFiles.offThread { () throws(MeshError) in
            var bytes = [UInt8](repeating: 0, count: wanted)
            var filled = 0
            while filled < wanted {
                let got = bytes.withUnsafeMutableBytes { buffer in
                    pread(self.descriptor, buffer.baseAddress! + filled, wanted - filled, off_t(offset + filled))
                }
                if got < 0 {
                    if errno == EINTR { continue }
                    throw MeshError(
                        .storeFailed,
                        "store: could not read \(self.path): \(String(cString: strerror(errno)))"
                    )
                }
                guard got > 0 else {
                    throw MeshError(
                        .storeCorrupt,
                        "the payload file \(self.path) ends at \(offset + filled) bytes, its inbox row says \(self.byteCount)"
                    )
                }
                filled += got
            }
            return bytes
        }
    }
}
