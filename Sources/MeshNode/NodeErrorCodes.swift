import MeshCore

extension MeshError.Code {
    /// No node answers on the data directory's control socket.
    public static let nodeNotRunning = MeshError.Code("nodeNotRunning")
    /// Another live node already uses the data directory.
    public static let nodeAlreadyRunning = MeshError.Code("nodeAlreadyRunning")
    /// A control request or reply was malformed, or the node refused the request.
    public static let controlRequestFailed = MeshError.Code("controlRequestFailed")
}
