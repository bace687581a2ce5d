import Foundation
import GRDB
import Glibc
import MeshCore

extension StoreInbox {
    /// The start of the name of a received payload's file in the payload directory.
    static let filePrefix = "inbox-"

    /// Whether the dedup log already holds `id` (read-only: the write transaction
    /// checks again).
    func isKnown(_ id: MessageID) async throws(MeshError) -> Bool {
        try await database.read("look up message \(id.hex) in the dedup log") { db in
            try DedupRow.exists(db, key: id.hex)
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
                payload = try await OutboxPayloadFiles.offThread { () throws(MeshError) in try files.read(name, bytes: row.bytes) }
            } catch {
                guard try await stillHolds(row) else { return nil }
                throw error
            }
        }
        return Entry(
            sequence: Int(row.sequence ?? 0), receivedAt: Millis.date(row.receivedAt),
            message: InboundMessage(
                id: try Self.stored(MessageID.stored, row.messageID), from: try Self.stored(PeerID.stored, row.sender),
                payload: payload, transport: row.transport, topic: row.topic, emergency: row.emergency != 0))
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
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM inbox WHERE sequence = ?)", arguments: [row.sequence]) ?? false
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
        if let name = row.payloadFile {
            let path = database.payloadFiles.directory + "/" + name
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                let code = errno
                guard try await stillHolds(row) else { return nil }
                throw MeshError(.storeCorrupt, "the payload file \(path) of inbox entry \(sequence) is missing or unreadable (\(String(cString: strerror(code))))")
            }
            source = .file(InboxPayloadFile(descriptor: descriptor, path: path, byteCount: row.bytes))
        } else {
            source = .bytes(Array(row.payload))
        }
        return Payload(
            sequence: sequence, id: try Self.stored(MessageID.stored, row.messageID), from: try Self.stored(PeerID.stored, row.sender),
            byteCount: row.bytes, source: source)
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
                    throw MeshError(.storeFailed, "store: could not read \(self.path): \(String(cString: strerror(errno)))")
                }
                guard got > 0 else {
                    throw MeshError(
                        .storeCorrupt, "the payload file \(self.path) ends at \(offset + filled) bytes, its inbox row says \(self.byteCount)")
                }
                filled += got
            }
            return bytes
        }
    }
}
