import MeshCore

/// A transport as the node hands it to the router: the transport itself, plus a report
/// to the ``AddressLedgerService`` of every dial that failed, so that the address
/// ledger counts failures per address (the router's events say when a link came up,
/// not when a dial was refused).
struct LedgerTransport: Transport {
    /// The transport wrapped.
    let inner: any Transport
    /// Where failed dials are reported.
    let reports: AddressLedgerService.Reports

    var name: String { inner.name }
    var capabilities: TransportCapabilities { inner.capabilities }

    func listen(context: TransportContext) async throws {
        try await inner.listen(context: context)
    }

    func apply(_ pacing: TransportPacing) async {
        await inner.apply(pacing)
    }

    func dial(_ hint: PeerHint) async throws -> any Link {
        do {
            return try await inner.dial(hint)
        } catch {
            if !(error is CancellationError) {
                reports.dialFailed(hint, reason: (error as? MeshError)?.message ?? "\(error)")
            }
            throw error
        }
    }
}
