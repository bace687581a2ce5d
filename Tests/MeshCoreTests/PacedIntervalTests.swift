import Testing

@testable import MeshCore

/// A power profile lengthens a paced interval (the keepalive, route summaries); nothing
/// shortens it below the configured one.
@Suite struct PacedIntervalTests {
    @Test func aProfileLengthensTheIntervalButNeverShortensIt() {
        let setting = PacedInterval(configured: .seconds(30))
        #expect(setting.interval == .seconds(30))
        setting.set(.seconds(300))
        #expect(setting.interval == .seconds(300))
        setting.set(.milliseconds(5))
        #expect(setting.interval == .seconds(30))
        setting.set(.milliseconds(45_500))
        #expect(setting.interval == .milliseconds(45_500))
        setting.set(nil)
        #expect(setting.interval == .seconds(30))
    }
}
