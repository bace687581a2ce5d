#if canImport(CAvahi)
import CAvahi

/// An error code from libavahi with the call that returned it.
struct AvahiError: Error, Sendable, CustomStringConvertible {
    /// Avahi's negative error code (`AVAHI_ERR_*`).
    var code: Int32
    /// The C function that failed.
    var operation: String

    /// Avahi's own text for the code.
    var reason: String { AvahiError.text(code) }

    var description: String { "\(operation): \(reason) (\(code))" }

    /// Avahi's text for an error code.
    static func text(_ code: Int32) -> String {
        guard let text = avahi_strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }

    /// Whether the code says the daemon or the bus went away.
    static func isDisconnect(_ code: Int32) -> Bool {
        code == Int32(AVAHI_ERR_DISCONNECTED) || code == Int32(AVAHI_ERR_NO_DAEMON)
            || code == Int32(AVAHI_ERR_DBUS_ERROR)
    }

    static let collision = Int32(AVAHI_ERR_COLLISION)
}

extension AvahiClientStatus {
    init(_ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_REGISTERING: self = .registering
        case AVAHI_CLIENT_S_RUNNING: self = .running
        case AVAHI_CLIENT_S_COLLISION: self = .collision
        case AVAHI_CLIENT_CONNECTING: self = .connecting
        default: self = .failure
        }
    }
}

extension AvahiGroupStatus {
    init(_ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_UNCOMMITED: self = .uncommitted
        case AVAHI_ENTRY_GROUP_REGISTERING: self = .registering
        case AVAHI_ENTRY_GROUP_ESTABLISHED: self = .established
        case AVAHI_ENTRY_GROUP_COLLISION: self = .collision
        default: self = .failure
        }
    }
}

#endif
