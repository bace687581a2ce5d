import Foundation
import Synchronization

/// Logins for the dashboard: `scmesh dashboard` asks (with the API token) for a
/// one-time login token, valid for a few minutes and for one use; the page exchanges
/// it for a session cookie. The one-time token travels in the URL's fragment
/// (`/#login=…`), which browsers never send to the server, so it never reaches a log.
final class DashboardSessions: Sendable {
    /// How long a one-time token may wait for its exchange.
    let loginLifetime: Duration
    /// Sessions kept at once (the oldest goes first).
    let maximumSessions: Int

    private struct State {
        var logins: [String: ContinuousClock.Instant] = [:]
        var sessions: [String] = []
    }

    private let state = Mutex(State())

    init(loginLifetime: Duration = .seconds(300), maximumSessions: Int = 64) {
        self.loginLifetime = loginLifetime
        self.maximumSessions = maximumSessions
    }

    /// A new one-time login token.
    func makeLogin() -> String {
        let token = Self.randomToken()
        let now = ContinuousClock.now
        state.withLock { state in
            state.logins = state.logins.filter { $0.value > now }
            state.logins[token] = now + loginLifetime
        }
        return token
    }

    /// Exchanges a one-time token for a session (nil when it is unknown, used or expired).
    func exchange(_ login: String) -> String? {
        let now = ContinuousClock.now
        return state.withLock { state -> String? in
            guard let expiry = state.logins.removeValue(forKey: login), expiry > now else { return nil }
            let session = Self.randomToken()
            state.sessions.append(session)
            if state.sessions.count > maximumSessions { state.sessions.removeFirst() }
            return session
        }
    }

    /// Whether `session` is a live session.
    func isValid(_ session: Substring) -> Bool {
        state.withLock { state in state.sessions.contains { APIToken.matches(session, $0) } }
    }

    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
