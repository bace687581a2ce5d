import Foundation
import MeshCore
import NIOCore

extension MeshError.Code {
    /// No node answers on the data directory's control socket.
    public static let nodeNotRunning = MeshError.Code("nodeNotRunning")
    /// Another live node already uses the data directory.
    public static let nodeAlreadyRunning = MeshError.Code("nodeAlreadyRunning")
    /// A control request or reply was malformed, or the node refused the request.
    public static let controlRequestFailed = MeshError.Code("controlRequestFailed")
}

extension MeshError {
    /// `error` as a `MeshError` a user can read: a `MeshError` as it is; a system
    /// call's error (NIO's `IOError`) as its reason without the call syntax
    /// (`connection reset by peer`); anything else by its type only, since a
    /// library's description is not written for users.
    public static func describing(_ error: any Error) -> MeshError {
        switch error {
        case let error as MeshError:
            return error
        case let error as IOError:
            return MeshError(
                .controlRequestFailed,
                String(cString: strerror(error.errnoCode)).lowercased(),
                cause: error
            )
        default:
            return MeshError(.controlRequestFailed, "unexpected \(type(of: error))", cause: error)
        }
    }
}
