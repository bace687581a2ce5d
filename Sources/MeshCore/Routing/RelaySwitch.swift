import Logging
import Synchronization

/// The `relay.enabled` switch, flipped at run time by ``Router/setRelayEnabled(_:)``.
final class RelaySwitch: Sendable {
    let enabled: Atomic<Bool>

    init(_ enabled: Bool) {
        self.enabled = Atomic(enabled)
    }

    var isEnabled: Bool { enabled.load(ordering: .relaxed) }

    /// Sets the switch; returns the previous value.
    func set(_ value: Bool) -> Bool {
        enabled.exchange(value, ordering: .relaxed)
    }
}
