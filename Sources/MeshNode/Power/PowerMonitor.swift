import Foundation
import Logging
import MeshCore
import ServiceLifecycle
import Synchronization

/// Reads the power state every `power.poll_seconds` (and on demand, for `scmesh
/// power`), maps it to a ``PowerProfile`` and, with `power.auto_adjust`, applies the
/// profile's relay budget through the same path as `scmesh settings
/// --relay-max-per-hour`, and its pacing (BLE scanning and advertising, keepalive)
/// through the router's ``Router/setPacing(_:)``, one change at a time from ``run()``.
///
/// The budget is set when the profile or an override changes (and at the first read),
/// so a value set with `scmesh settings` holds until the next such change. A profile
/// pinned with `scmesh power --profile` applies whatever the state and `auto_adjust`
/// say; an override (`scmesh power --override relay_max_per_hour=N`) holds across
/// profile changes until cleared. Both are saved in the data directory
/// (``SavedSettings``) and read back at start. Each profile change after the first
/// read is a `power_profile_changed` event.
public final class PowerMonitor: Service, Sendable {
    /// The keys `scmesh power --override` knows.
    public static let overrideKeys = ["relay_max_per_hour", "ble_scan_interval_ms"]

    /// The `power:` settings.
    public let settings: NodeConfiguration.PowerSettings
    private let configuredMaxPerHour: Int
    private let clock: any MeshClock
    private let currentMaxPerHour: @Sendable () -> Int
    private let applyMaxPerHour: @Sendable (Int) -> Void
    private let applyPacing: @Sendable (TransportPacing) async -> Void
    private let pacingChanges: AsyncStream<TransportPacing>
    private let pacingContinuation: AsyncStream<TransportPacing>.Continuation
    private let logger: Logger
    private let dataDirectory: String?
    private let events: EventLog?

    private struct State {
        /// The profile last in effect and the budget last applied.
        var applied: (profile: PowerProfile?, relayMaxPerHour: Int)?
        /// The override of `relay_max_per_hour`.
        var relayMaxPerHourOverride: Int?
        /// The override of `ble_scan_interval_ms`.
        var bleScanIntervalOverride: Int?
        /// The pacing last handed to ``run()`` to apply.
        var pacing = TransportPacing.configured
        /// The pinned profile.
        var pinned: PowerProfile?
        /// The profile in effect at the last read (for the change event).
        var lastProfile: PowerProfile?
    }

    private let state: Mutex<State>

    /// A monitor that reads and sets the relay budget through two functions (the
    /// node passes its router's).
    /// - Parameters:
    ///   - configuredMaxPerHour: the config's `relay.max_per_hour`.
    ///   - dataDirectory: where overrides and the pinned profile are saved; nil: not saved.
    public convenience init(
        settings: NodeConfiguration.PowerSettings,
        configuredMaxPerHour: Int,
        clock: any MeshClock,
        logger: Logger,
        dataDirectory: String? = nil,
        currentMaxPerHour: @escaping @Sendable () -> Int,
        applyMaxPerHour: @escaping @Sendable (Int) -> Void,
        applyPacing: @escaping @Sendable (TransportPacing) async -> Void = { _ in }
    ) {
        self.init(
            settings: settings,
            configuredMaxPerHour: configuredMaxPerHour,
            clock: clock,
            logger: logger,
            dataDirectory: dataDirectory,
            events: nil,
            currentMaxPerHour: currentMaxPerHour,
            applyMaxPerHour: applyMaxPerHour,
            applyPacing: applyPacing
        )
    }

    /// A monitor that also records each profile change in `events`.
    package init(
        settings: NodeConfiguration.PowerSettings,
        configuredMaxPerHour: Int,
        clock: any MeshClock,
        logger: Logger,
        dataDirectory: String?,
        events: EventLog?,
        currentMaxPerHour: @escaping @Sendable () -> Int,
        applyMaxPerHour: @escaping @Sendable (Int) -> Void,
        applyPacing: @escaping @Sendable (TransportPacing) async -> Void = { _ in }
    ) {
        self.settings = settings
        self.configuredMaxPerHour = configuredMaxPerHour
        self.clock = clock
        self.logger = logger
        self.dataDirectory = dataDirectory
        self.events = events
        self.currentMaxPerHour = currentMaxPerHour
        self.applyMaxPerHour = applyMaxPerHour
        self.applyPacing = applyPacing
        (pacingChanges, pacingContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        var initial = State()
        if let dataDirectory {
            do {
                let saved = try SavedSettings.load(dataDirectory: dataDirectory)
                initial.relayMaxPerHourOverride = saved.powerOverrideRelayMaxPerHour
                initial.bleScanIntervalOverride = saved.powerOverrideBleScanIntervalMs
                initial.pinned = saved.powerProfile
            } catch {
                logger.warning("power overrides not read: \(error)")
            }
        }
        state = Mutex(initial)
    }

    /// A monitor over a router's relay budget, saving its overrides in `dataDirectory`
    /// and recording profile changes in `events`.
    package convenience init(
        settings: NodeConfiguration.PowerSettings,
        router: Router,
        clock: any MeshClock,
        logger: Logger,
        dataDirectory: String?,
        events: EventLog?
    ) {
        self.init(
            settings: settings,
            configuredMaxPerHour: router.relayLimits().maxPerHour,
            clock: clock,
            logger: logger,
            dataDirectory: dataDirectory,
            events: events,
            currentMaxPerHour: { router.relayLimits().maxPerHour },
            applyMaxPerHour: { perHour in
                var limits = router.relayLimits()
                limits.maxPerHour = perHour
                router.setRelayLimits(limits)
            },
            applyPacing: { pacing in await router.setPacing(pacing) }
        )
    }

    /// Sets an override, `KEY=VALUE` (a key of ``overrideKeys``), saves it and applies it.
    /// - Throws: ``MeshError`` `.invalidArgument` naming an unknown key or a bad value;
    ///   as ``SavedSettings/update(dataDirectory:_:)`` when it cannot be saved.
    @discardableResult
    public func setOverride(_ assignment: String) throws(MeshError) -> PowerReply {
        guard let equals = assignment.firstIndex(of: "=") else {
            throw MeshError(
                .invalidArgument,
                "power override \"\(assignment)\" is not KEY=VALUE; say e.g. relay_max_per_hour=100"
            )
        }
        let key = String(assignment[..<equals]).trimmingCharacters(in: .whitespaces)
        let text = String(assignment[assignment.index(after: equals)...]).trimmingCharacters(in: .whitespaces)
        guard Self.overrideKeys.contains(key) else {
            throw MeshError(
                .invalidArgument,
                "unknown power override key \"\(key)\" (known: \(Self.overrideKeys.joined(separator: ", ")))"
            )
        }
        // The LE scan interval's range is 2.5 ms to 10.24 s; the relay budget's 0 means no limit.
        let isScan = key == "ble_scan_interval_ms"
        let (range, wanted) =
            isScan
            ? (3...10_240, "whole milliseconds from 3 to 10240")
            : (0...Int.max, "a whole number, 0 or more (0 = no limit)")
        guard let value = Int(text), range.contains(value) else {
            throw MeshError(.invalidArgument, "bad value \"\(text)\" for \(key): give \(wanted)")
        }
        if isScan {
            try save { $0.powerOverrideBleScanIntervalMs = value }
            state.withLock { $0.bleScanIntervalOverride = value }
        } else {
            try save { $0.powerOverrideRelayMaxPerHour = value }
            state.withLock { $0.relayMaxPerHourOverride = value }
        }
        return poll()
    }

    /// Drops every override, saved too, so the profile's values apply again.
    /// - Throws: as ``SavedSettings/update(dataDirectory:_:)`` when it cannot be saved.
    @discardableResult
    public func clearOverrides() throws(MeshError) -> PowerReply {
        try save {
            $0.powerOverrideRelayMaxPerHour = nil
            $0.powerOverrideBleScanIntervalMs = nil
        }
        state.withLock {
            $0.relayMaxPerHourOverride = nil
            $0.bleScanIntervalOverride = nil
        }
        return poll()
    }

    /// Pins a profile (nil: unpins it, so the power state picks it again), saved too.
    /// - Throws: as ``SavedSettings/update(dataDirectory:_:)`` when it cannot be saved.
    @discardableResult
    public func pin(_ profile: PowerProfile?) throws(MeshError) -> PowerReply {
        try save { $0.powerProfile = profile }
        state.withLock { $0.pinned = profile }
        return poll()
    }

    private func save(_ change: (inout SavedSettings) -> Void) throws(MeshError) {
        guard let dataDirectory else { return }
        try SavedSettings.update(dataDirectory: dataDirectory, change)
    }

    /// Reads the power state now, applies its profile or an override when either
    /// changed, and says what is in effect.
    @discardableResult
    public func poll() -> PowerReply {
        let powerState = PowerState.read(supplyPath: settings.supplyPath)
        let stateProfile = PowerProfile(powerState)
        let autoAdjust = settings.autoAdjust
        let configured = configuredMaxPerHour
        let outcome = state.withLock { state in
            let profile = state.pinned ?? stateProfile
            let active = autoAdjust || state.pinned != nil
            let planned = profile.relayMaxPerHour(configured: configured)
            let previous = state.lastProfile
            state.lastProfile = profile
            let target: (value: Int, source: PowerReply.Source)
            if let override = state.relayMaxPerHourOverride {
                target = (override, .override)
            } else if active {
                target = planned
            } else {
                target = (configured, .config)
            }
            let key = (profile: active ? profile : nil, relayMaxPerHour: target.value)
            if let last = state.applied, last.profile == key.profile, last.relayMaxPerHour == key.relayMaxPerHour {
                // Nothing changed since the last apply.
            } else if state.applied == nil && !active && state.relayMaxPerHourOverride == nil {
                // Nothing to apply: the config's value is in force.
                state.applied = key
            } else {
                state.applied = key
                applyMaxPerHour(target.value)
            }
            var pacing = active ? profile.pacing : .configured
            if let interval = state.bleScanIntervalOverride { pacing.scanInterval = .milliseconds(interval) }
            if pacing != state.pacing {
                state.pacing = pacing
                pacingContinuation.yield(pacing)
            }
            return (
                profile: profile, previous: previous, target: target, pinned: state.pinned,
                override: state.relayMaxPerHourOverride, scanOverride: state.bleScanIntervalOverride,
                pacing: pacing
            )
        }
        if let previous = outcome.previous, previous != outcome.profile {
            let battery = powerState.batteryPercent.map { "battery \($0) %" } ?? "no battery"
            let reason =
                outcome.pinned != nil
                ? "pinned with scmesh power --profile"
                : "\(battery), \(powerState.onExternalPower ? "external power" : "discharging")"
            logger.info(
                "power profile \(outcome.profile.rawValue)",
                metadata: [
                    "battery_percent": "\(powerState.batteryPercent.map(String.init) ?? "none")",
                    "mains_online": "\(powerState.mainsOnline)", "relay_max_per_hour": "\(outcome.target.value)",
                ]
            )
            events?.append(
                RouterEvent(
                    RouterEvent.Kind("power_profile_changed"),
                    from: previous.rawValue,
                    to: outcome.profile.rawValue,
                    reason: reason
                )
            )
        }
        let current = currentMaxPerHour()
        // The value in force is the target unless `scmesh settings` changed it since.
        let source: PowerReply.Source = current != outcome.target.value ? .settings : outcome.target.source
        var overrides: [String: Int] = [:]
        overrides["relay_max_per_hour"] = outcome.override
        overrides["ble_scan_interval_ms"] = outcome.scanOverride
        let profilePaces = outcome.pacing.advertisingInterval != nil
        return PowerReply(
            supplyPath: settings.supplyPath,
            autoAdjust: settings.autoAdjust,
            pollSeconds: settings.pollSeconds,
            state: powerState,
            profile: outcome.profile,
            pinnedProfile: outcome.pinned,
            overrides: overrides,
            effective: PowerReply.Values(relayMaxPerHour: current, pacing: outcome.pacing),
            sources: PowerReply.Sources(
                relayMaxPerHour: source,
                bleScanIntervalMs: outcome.scanOverride != nil ? .override : profilePaces ? .profile : .config,
                pacing: profilePaces ? .profile : .config
            )
        )
    }

    /// Polls every `poll_seconds` on the monitor's clock until the service group
    /// shuts down or the task is cancelled.
    /// Applies each pacing change meanwhile, in order.
    public func run() async throws {
        let interval = Duration.milliseconds(Int((settings.pollSeconds * 1000).rounded()))
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    for await pacing in self.pacingChanges { await self.applyPacing(pacing) }
                }
                while !Task.isCancelled {
                    self.poll()
                    do {
                        try await self.clock.sleep(until: self.clock.now + interval)
                    } catch {
                        break
                    }
                }
                group.cancelAll()
            }
        }
    }
}
