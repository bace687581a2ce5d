import Synchronization

/// Where the node's HTTP API listens once it runs (`host:port`, the real port when
/// `http.listen` asked for port 0), or why it does not; `scmesh status` shows it.
/// Written by the HTTP server (module `MeshNodeHTTP`), read by the control handler.
package final class HTTPEndpoint: Sendable {
    private let state = Mutex<(address: String?, problem: String?, note: String?)>((nil, nil, nil))

    package init() {}

    /// The bound address, or nil while it is not listening.
    package var address: String? { state.withLock { $0.address } }
    /// Why it does not listen (bind failed), or nil.
    package var problem: String? { state.withLock { $0.problem } }
    /// Why it listens elsewhere than `http.listen` says (the port was taken), or nil.
    package var note: String? { state.withLock { $0.note } }

    /// Records the bound address, and why it is not the configured one.
    package func listening(on address: String, note: String? = nil) {
        state.withLock { $0 = (address, nil, note) }
    }

    /// Records that the server could not listen, or stopped.
    package func stopped(problem: String?) { state.withLock { $0 = (nil, problem, nil) } }
}
