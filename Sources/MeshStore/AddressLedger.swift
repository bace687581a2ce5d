import Foundation
import GRDB
import MeshCore

/// How one address of one peer, on one transport, has worked out.
public struct LedgerEntry: Sendable, Hashable, Codable {
    /// The peer.
    public var peer: PeerID
    /// The transport's name (`tcp`, `mdns`, `ble`, ...).
    public var transport: String
    /// The address, in the transport's own notation (`192.0.2.1:7420`, a BLE address...).
    public var address: String
    /// Successful connections (or sends) through it.
    public var successes: Int
    /// Failed attempts.
    public var failures: Int
    /// When it was last seen: discovered, tried, or used.
    public var lastSeen: Date
    /// When it last worked.
    public var lastSuccess: Date?
    /// When it last failed.
    public var lastFailure: Date?

    init(_ row: AddressRow) throws {
        peer = try PeerID.stored(row.peer)
        transport = row.transport
        address = row.address
        successes = row.successes
        failures = row.failures
        lastSeen = Millis.date(row.lastSeen)
        lastSuccess = Millis.date(row.lastSuccess)
        lastFailure = Millis.date(row.lastFailure)
    }
}

/// The address ledger: per peer, per transport, per address, the successes and failures
/// seen, so that a node dials the addresses that worked first.
public struct AddressLedger: Sendable {
    let database: StoreDatabase

    /// Records that `address` worked (a connection was made, a send acknowledged).
    /// - Parameter date: when; nil for the store's clock.
    /// - Throws: ``MeshError`` when the file cannot be written.
    public func recordSuccess(
        peer: PeerID,
        transport: String,
        address: String,
        at date: Date? = nil
    ) async throws(MeshError) {
        try await record(peer: peer, transport: transport, address: address, at: date, column: "successes")
    }

    /// Records that `address` failed (a dial or a send did not go through).
    /// - Parameter date: when; nil for the store's clock.
    /// - Throws: ``MeshError`` when the file cannot be written.
    public func recordFailure(
        peer: PeerID,
        transport: String,
        address: String,
        at date: Date? = nil
    ) async throws(MeshError) {
        try await record(peer: peer, transport: transport, address: address, at: date, column: "failures")
    }

    /// Records that `address` was seen (discovered, announced) without trying it.
    /// - Parameter date: when; nil for the store's clock.
    /// - Throws: ``MeshError`` when the file cannot be written.
    public func recordSeen(
        peer: PeerID,
        transport: String,
        address: String,
        at date: Date? = nil
    ) async throws(MeshError) {
        try await record(peer: peer, transport: transport, address: address, at: date, column: nil)
    }

    private func record(
        peer: PeerID,
        transport: String,
        address: String,
        at date: Date?,
        column: String?
    ) async throws(MeshError) {
        let at = date.map(Millis.from) ?? database.nowMillis
        let outcome = column.map { "\($0) = \($0) + 1, " } ?? ""
        let last =
            column == "successes"
            ? "lastSuccess = MAX(COALESCE(lastSuccess, ?1), ?1), "
            : column == "failures" ? "lastFailure = MAX(COALESCE(lastFailure, ?1), ?1), " : ""
        let inserted = (column == "successes" ? 1 : 0, column == "failures" ? 1 : 0)
        try await database.write("record address \(address) of \(peer.hex)") { db in
            // Times only move forward: recording an older event does not move them back.
            try db.execute(
                sql: """
                    INSERT INTO address(peer, transport, address, successes, failures, lastSeen, lastSuccess, lastFailure)
                    VALUES (?2, ?3, ?4, ?5, ?6, ?1, CASE WHEN ?5 = 1 THEN ?1 END, CASE WHEN ?6 = 1 THEN ?1 END)
                    ON CONFLICT(peer, transport, address) DO UPDATE SET \(outcome)\(last)lastSeen = MAX(lastSeen, ?1)
                    """,
                arguments: [at, peer.hex, transport, address, inserted.0, inserted.1]
            )
        }
    }

    /// The addresses of `peer`, best first: the most recent success first (addresses
    /// that never worked last), then the fewest failures, then the most recently seen.
    /// - Parameter transport: only this transport's addresses; nil for all.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func addresses(for peer: PeerID, transport: String? = nil) async throws(MeshError) -> [LedgerEntry] {
        try await database.read("read the addresses of \(peer.hex)") { db in
            try AddressRow.fetchAll(
                db,
                sql: """
                    SELECT * FROM address WHERE peer = ? AND (? IS NULL OR transport = ?)
                    ORDER BY lastSuccess IS NULL, lastSuccess DESC, failures ASC, lastSeen DESC
                    """,
                arguments: [peer.hex, transport, transport]
            ).map(LedgerEntry.init)
        }
    }

    /// Forgets one address. Returns whether it was known.
    /// - Throws: ``MeshError`` when the file cannot be written.
    @discardableResult
    public func remove(peer: PeerID, transport: String, address: String) async throws(MeshError) -> Bool {
        try await database.write("forget address \(address) of \(peer.hex)") { db in
            try db.execute(
                sql: "DELETE FROM address WHERE peer = ? AND transport = ? AND address = ?",
                arguments: [peer.hex, transport, address]
            )
            return db.changesCount == 1
        }
    }
}
