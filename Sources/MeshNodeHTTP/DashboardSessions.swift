import Foundation
import Synchronization

/// Logins for the dashboard: `scmesh dashboard` asks (with the API token) for a
/// one-time login token, valid for a few minutes and for one use; the page exchanges
/// it for a session cookie. The one-time token travels in the URL's fragment
/// (`/#login=…`), which browsers never send to the server, so it never reaches a log.
///
/// A session ends after ``idleLifetime`` without a request and, however busy, after
/// ``absoluteLifetime``; `scmesh dashboard` then gives a new login link.
final class DashboardSessions: Sendable {
    /// How long a one-time token may wait for its exchange.
    let loginLifetime: Duration
    /// How long a session lives without a request.
    let idleLifetime: Duration
    /// How long a session lives at most.
    let absoluteLifetime: Duration
    /// Sessions kept at once (the oldest goes first).
    let maximumSessions: Int
    /// The time now; a test passes a clock it moves itself.
    private let now: @Sendable () -> ContinuousClock.Instant

    private struct Session {
        var token: String
        var created: ContinuousClock.Instant
        var lastUsed: ContinuousClock.Instant
    }

    private struct State {
        var logins: [String: ContinuousClock.Instant] = [:]
        var sessions: [Session] = []
    }

    private let state = Mutex(State())

    init(
        loginLifetime: Duration = .seconds(300),
        idleLifetime: Duration = .seconds(30 * 60),
        absoluteLifetime: Duration = .seconds(12 * 3600),
        maximumSessions: Int = 64,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.loginLifetime = loginLifetime
        self.idleLifetime = idleLifetime
        self.absoluteLifetime = absoluteLifetime
        self.maximumSessions = maximumSessions
        self.now = now
    }

    /// A new one-time login token.
    func makeLogin() -> String {
        let token = Self.randomToken()
        let now = self.now()
        state.withLock { state in
            state.logins = state.logins.filter { $0.value > now }
            state.logins[token] = now + loginLifetime
        }
        return token
    }

    /// Exchanges a one-time token for a session (nil when it is unknown, used or expired).
    func exchange(_ login: String) -> String? {
        let now = self.now()
        return state.withLock { state -> String? in
            guard let expiry = state.logins.removeValue(forKey: login), expiry > now else { return nil }
            let session = Self.randomToken()
            state.sessions.append(Session(token: session, created: now, lastUsed: now))
            if state.sessions.count > maximumSessions { state.sessions.removeFirst() }
            return session
        }
    }

    /// Whether `session` is a live session; a live one counts as used now.
    func isValid(_ session: Substring) -> Bool {
        let now = self.now()
        return state.withLock { state in
            state.sessions.removeAll { now - $0.lastUsed >= idleLifetime || now - $0.created >= absoluteLifetime }
            guard let index = state.sessions.firstIndex(where: { APIToken.matches(session, $0.token) }) else {
                return false
            }
            state.sessions[index].lastUsed = now
            return true
        }
    }

    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
