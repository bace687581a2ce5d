import Synchronization

/// Where the node's HTTP API listens once it runs (`host:port`, the real port when
/// `http.listen` asked for port 0), or why it does not; `scmesh status` shows it.
/// Written by the HTTP server (module `MeshNodeHTTP`), read by the control handler.
package final class HTTPEndpoint: Sendable {
    private let state = Mutex<(address: String?, problem: String?)>((nil, nil))

    package init() {}

    /// The bound address, or nil while it is not listening.
    package var address: String? { state.withLock { $0.address } }
    /// Why it does not listen (bind failed), or nil.
    package var problem: String? { state.withLock { $0.problem } }

    /// Records the bound address.
    package func listening(on address: String) { state.withLock { $0 = (address, nil) } }

    /// Records that the server could not listen, or stopped.
    package func stopped(problem: String?) { state.withLock { $0 = (nil, problem) } }
}
