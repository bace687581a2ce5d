import Logging
import MeshCore
import ServiceLifecycle
import Synchronization

/// Reads the power state every `power.poll_seconds` (and on demand, for `scmesh
/// power`), maps it to a ``PowerProfile`` and, with `power.auto_adjust`, applies the
/// profile's relay budget through the same path as `scmesh settings
/// --relay-max-per-hour`.
///
/// The budget is set when the profile changes (and at the first read), so a value
/// set with `scmesh settings` holds until the next profile change.
public final class PowerMonitor: Service, Sendable {
    /// The `power:` settings.
    public let settings: NodeConfiguration.PowerSettings
    private let configuredMaxPerHour: Int
    private let clock: any MeshClock
    private let currentMaxPerHour: @Sendable () -> Int
    private let applyMaxPerHour: @Sendable (Int) -> Void
    private let logger: Logger
    /// The profile last applied and the budget it set.
    private let applied = Mutex<(profile: PowerProfile, relayMaxPerHour: Int)?>(nil)

    /// A monitor that reads and sets the relay budget through two functions (the
    /// node passes its router's).
    /// - Parameter configuredMaxPerHour: the config's `relay.max_per_hour`.
    public init(
        settings: NodeConfiguration.PowerSettings,
        configuredMaxPerHour: Int,
        clock: any MeshClock,
        logger: Logger,
        currentMaxPerHour: @escaping @Sendable () -> Int,
        applyMaxPerHour: @escaping @Sendable (Int) -> Void
    ) {
        self.settings = settings
        self.configuredMaxPerHour = configuredMaxPerHour
        self.clock = clock
        self.logger = logger
        self.currentMaxPerHour = currentMaxPerHour
        self.applyMaxPerHour = applyMaxPerHour
    }

    /// A monitor over a router's relay budget.
    public convenience init(
        settings: NodeConfiguration.PowerSettings,
        router: Router,
        clock: any MeshClock,
        logger: Logger
    ) {
        self.init(
            settings: settings,
            configuredMaxPerHour: router.relayLimits().maxPerHour,
            clock: clock,
            logger: logger,
            currentMaxPerHour: { router.relayLimits().maxPerHour },
            applyMaxPerHour: { perHour in
                var limits = router.relayLimits()
                limits.maxPerHour = perHour
                router.setRelayLimits(limits)
            }
        )
    }

    /// Reads the power state now, applies its profile when that changed (with
    /// `auto_adjust`), and says what is in effect.
    @discardableResult
    public func poll() -> PowerReply {
        let state = PowerState.read(supplyPath: settings.supplyPath)
        let profile = PowerProfile(state)
        let planned = profile.relayMaxPerHour(configured: configuredMaxPerHour)
        let (changed, target): (Bool, Int?) = applied.withLock { applied in
            guard settings.autoAdjust else { return (false, nil) }
            if let last = applied, last.profile == profile { return (false, last.relayMaxPerHour) }
            let changed = applied != nil
            applied = (profile, planned.value)
            applyMaxPerHour(planned.value)
            return (changed, planned.value)
        }
        if changed {
            logger.info(
                "power profile \(profile.rawValue)",
                metadata: [
                    "battery_percent": "\(state.batteryPercent.map(String.init) ?? "none")",
                    "mains_online": "\(state.mainsOnline)", "relay_max_per_hour": "\(planned.value)",
                ]
            )
        }
        let current = currentMaxPerHour()
        // The value in force is the profile's (or the config's) unless `scmesh settings`
        // changed it since.
        let expected = target ?? configuredMaxPerHour
        let source: PowerReply.Source =
            current != expected ? .settings : target == nil ? .config : planned.source
        return PowerReply(
            supplyPath: settings.supplyPath,
            autoAdjust: settings.autoAdjust,
            pollSeconds: settings.pollSeconds,
            state: state,
            profile: profile,
            effective: PowerReply.Values(relayMaxPerHour: current),
            sources: PowerReply.Sources(relayMaxPerHour: source)
        )
    }

    /// Polls every `poll_seconds` on the monitor's clock until the service group
    /// shuts down or the task is cancelled.
    public func run() async throws {
        let interval = Duration.milliseconds(Int((settings.pollSeconds * 1000).rounded()))
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.poll()
                do {
                    try await self.clock.sleep(until: self.clock.now + interval)
                } catch {
                    return
                }
            }
        }
    }
}
