#if canImport(CAvahi)
import CAvahi

/// What the callbacks need: the generation of the client that registered them and the
/// stream to yield into. Retained once per client (`Unmanaged`), released when the
/// client is freed, after which Avahi calls none of its callbacks.
final class AvahiCallbackContext: Sendable {
    let generation: UInt64
    let continuation: AsyncStream<AvahiEvent>.Continuation

    init(generation: UInt64, continuation: AsyncStream<AvahiEvent>.Continuation) {
        self.generation = generation
        self.continuation = continuation
    }
}

#endif
