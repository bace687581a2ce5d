import GRDB
import MeshCore

extension MeshError.Code {
    /// The store file is damaged: it is not an SQLite database, or SQLite's integrity
    /// check found errors in it.
    public static let storeCorrupt = MeshError.Code("storeCorrupt")
    /// The store file is an SQLite database that another program wrote (it is not an
    /// SCMesh store).
    public static let storeForeign = MeshError.Code("storeForeign")
    /// The store file was written by a newer SCMesh with a schema this build does not know.
    public static let storeTooNew = MeshError.Code("storeTooNew")
    /// A bound of the store (outbox messages or bytes, per peer or in total) is reached.
    public static let storeFull = MeshError.Code("storeFull")
    /// Reading or writing the store failed (I/O error, disk full, closed store).
    public static let storeFailed = MeshError.Code("storeFailed")
}

/// Turns whatever a store operation threw into a ``MeshError`` that names the store
/// file and the operation. A ``MeshError`` thrown on purpose passes through.
func storeError(_ error: any Error, path: String, doing operation: String) -> MeshError {
    if let error = error as? MeshError { return error }
    if let error = error as? DatabaseError {
        switch error.resultCode {
        case .SQLITE_FULL:
            return MeshError(
                .storeFailed,
                "store \(path): could not \(operation): the disk is full; free some space",
                cause: error
            )
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return MeshError(
                .storeCorrupt,
                "store \(path): could not \(operation): the file is corrupt (\(error.message ?? "\(error.resultCode)")); stop the node and move the file away or restore a backup",
                cause: error
            )
        case .SQLITE_MISUSE:
            // What SQLite and GRDB answer on a closed connection.
            return MeshError(.notRunning, "store \(path): could not \(operation): the store is closed", cause: error)
        default:
            return MeshError(
                .storeFailed,
                "store \(path): could not \(operation): \(error.message ?? "\(error.resultCode)")",
                cause: error
            )
        }
    }
    if error is CancellationError {
        return MeshError(.notRunning, "store \(path): could not \(operation): the task was cancelled", cause: error)
    }
    return MeshError(.storeFailed, "store \(path): could not \(operation): \(error)", cause: error)
}
