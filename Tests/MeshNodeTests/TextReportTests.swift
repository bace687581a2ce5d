import MeshCore
import MeshNode
import Testing

@Suite struct TextReportTests {
    @Test("every refusal reason the router counts shows on the status line, zeros left out")
    func routerRefusals() {
        var stats = RouterStats()
        #expect(TextReport.routerRefusals(stats).isEmpty)
        stats.unauthenticatedLinksEvicted = 42
        stats.writeStalledLinksClosed = 1
        stats.framesRefused = 7
        stats.handshakeFailuresByReason["badSignature"] = 3
        stats.malformedInputs["malformedFrame"] = 2
        stats.sealedMessagesRejected["openFailed"] = 5
        #expect(
            TextReport.routerRefusals(stats) == [
                "unauthenticated_evicted": 42, "write_stalled_links": 1, "frames_refused": 7,
                "handshake_failed.badSignature": 3, "malformed.malformedFrame": 2, "sealed_rejected.openFailed": 5,
            ])
    }
}
