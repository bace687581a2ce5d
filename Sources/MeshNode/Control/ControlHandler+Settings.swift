import Foundation
import MeshCore
import TransportMDNS

extension ControlHandler {
    /// `settings`: the run-time settings; with `relay_enabled`, switches relaying (and
    /// with it sending and receiving) on or off first; with `relay_max_per_hour`,
    /// `relay_neighbour_share` or `relay_battery_floor_percent`, changes the relay's
    /// budgets (each checked before any changes). With `discovery_mode`, every mDNS
    /// transport switches to that mode at once (``MDNSTransport/setDiscoveryMode(_:)``).
    /// Every change is saved in the data directory (``SavedSettings``,
    /// ``SavedDiscoveryMode``) and holds across restarts; with `reset`, the saved
    /// changes are dropped and the config's values apply again, at once.
    package func settings(_ request: SettingsRequest) async throws -> SettingsReply {
        let mdns = liveTransports.compactMap { $0 as? MDNSTransport }
        if request.reset == true {
            guard request == SettingsRequest(reset: true) else {
                throw MeshError(
                    .invalidArgument,
                    "\"reset\" goes alone: it takes every setting back to the config's value"
                )
            }
            return try await resetSettings(mdns: mdns)
        }
        var discoveryMode: MDNSTransport.DiscoveryMode?
        if let word = request.discoveryMode {
            guard let mode = MDNSTransport.DiscoveryMode(rawValue: word) else {
                throw MeshError(
                    .invalidArgument,
                    "\"discovery_mode\" must be normal (announce the peer ID), cautious (announce without it) or paranoid (announce nothing, only browse), got \"\(word.prefix(40))\""
                )
            }
            guard !mdns.isEmpty else {
                throw MeshError(
                    .invalidArgument,
                    "\"discovery_mode\" applies to mDNS transports and this node runs none; enable transports.mdns in the config"
                )
            }
            discoveryMode = mode
        }
        var limits = router.relayLimits()
        if let perHour = request.relayMaxPerHour {
            guard perHour >= 0 else {
                throw MeshError(.invalidArgument, "\"relay_max_per_hour\" must be 0 (no limit) or more, got \(perHour)")
            }
            limits.maxPerHour = perHour
        }
        if let share = request.relayNeighbourShare {
            guard share > 0 && share <= 1 else {
                throw MeshError(
                    .invalidArgument,
                    "\"relay_neighbour_share\" must be above 0 and at most 1, got \(share)"
                )
            }
            limits.neighbourShare = share
        }
        if let floor = request.relayBatteryFloorPercent {
            guard (0...100).contains(floor) else {
                throw MeshError(
                    .invalidArgument,
                    "\"relay_battery_floor_percent\" must be between 0 (never) and 100, got \(floor)"
                )
            }
            limits.batteryFloorPercent = floor
        }
        // Everything is checked before anything changes; changes are saved before they
        // apply, so that a failure to save changes nothing.
        if request.relayEnabled != nil || request.changesBudgets {
            try SavedSettings.update(dataDirectory: dataDirectory) { saved in
                if let enabled = request.relayEnabled { saved.relayEnabled = enabled }
                if request.relayMaxPerHour != nil { saved.relayMaxPerHour = limits.maxPerHour }
                if request.relayNeighbourShare != nil { saved.relayNeighbourShare = limits.neighbourShare }
                if request.relayBatteryFloorPercent != nil {
                    saved.relayBatteryFloorPercent = limits.batteryFloorPercent
                }
            }
        }
        if let discoveryMode {
            try SavedDiscoveryMode.save(discoveryMode, dataDirectory: dataDirectory)
            for transport in mdns { await transport.setDiscoveryMode(discoveryMode) }
            // The name new links' handshakes carry follows the mode (paranoid withholds it).
            router.setAnnouncedName(SavedDiscoveryMode.applied(discoveryMode, to: configuration).announcedName)
        }
        if limits != router.relayLimits() { router.setRelayLimits(limits) }
        if let enabled = request.relayEnabled {
            router.setRelayEnabled(enabled)
        }
        return try currentSettings(mdns: mdns, changed: nil)
    }

    /// Drops every saved setting and applies the config's values.
    private func resetSettings(mdns: [MDNSTransport]) async throws -> SettingsReply {
        let base = configured ?? configuration
        let modePath = SavedDiscoveryMode.path(dataDirectory: dataDirectory)
        if unlink(modePath) != 0, errno != ENOENT {
            throw MeshError(
                .invalidArgument,
                "cannot remove \(modePath): \(String(cString: strerror(errno)).lowercased()); the settings were not reset"
            )
        }
        try SavedSettings.update(dataDirectory: dataDirectory) { saved in
            var kept = SavedSettings()
            kept.disabledTransports = saved.disabledTransports
            kept.powerOverrideRelayMaxPerHour = saved.powerOverrideRelayMaxPerHour
            kept.powerProfile = saved.powerProfile
            saved = kept
        }
        for transport in mdns {
            let configuredMode = base.transports[transport.name]?.configuration(as: MDNSTransport.Configuration.self)?
                .discoveryMode
            if let configuredMode { await transport.setDiscoveryMode(configuredMode) }
        }
        router.setAnnouncedName(base.announcedName)
        router.setRelayLimits(base.routerConfiguration.relayLimits)
        router.setRelayEnabled(base.routerConfiguration.relayEnabled)
        return try currentSettings(mdns: mdns, changed: "every setting is back to the config's value")
    }

    /// The settings in force, which of them come from a run-time change, and the config's values.
    private func currentSettings(mdns: [MDNSTransport], changed: String?) throws -> SettingsReply {
        let base = configured ?? configuration
        let saved = try SavedSettings.load(dataDirectory: dataDirectory)
        var runtime = saved.changedNames
        if !mdns.isEmpty, try SavedDiscoveryMode.load(dataDirectory: dataDirectory) != nil {
            runtime.append("discovery_mode")
        }
        let configuredMode = mdns.first.flatMap {
            base.transports[$0.name]?.configuration(as: MDNSTransport.Configuration.self)?.discoveryMode.rawValue
        }
        var reply = SettingsReply(
            relayEnabled: router.relayEnabled,
            limits: router.relayLimits(),
            discoveryMode: mdns.first?.discoveryMode.rawValue
        )
        reply.runtime = runtime
        reply.config = SettingsReply.Values(
            relayEnabled: base.routerConfiguration.relayEnabled,
            limits: base.routerConfiguration.relayLimits,
            discoveryMode: configuredMode
        )
        reply.changed = changed
        return reply
    }
}
