import Foundation
import MeshCore
import MeshNode
import MeshStore
import MeshTesting
import TestSupport
import Testing
import TransportLoopback

/// Loads `yaml` with the given layers, returning the error message when loading fails.
private func loadError(
    _ yaml: String,
    environment: [String: String] = [:],
    overrides: [String] = [],
    registry: TransportRegistry = .builtIn
) -> String? {
    do {
        _ = try NodeConfiguration.load(
            yaml: yaml,
            source: "test.yaml",
            environment: environment,
            overrides: overrides,
            registry: registry
        )
        return nil
    } catch let error as MeshError {
        #expect(error.code == .invalidConfiguration)
        return error.message
    } catch {
        Issue.record("unexpected error type: \(error)")
        return "\(error)"
    }
}

@Suite("Config")
struct ConfigTests {
    @Test("built-in defaults: every transport present but off, relay off (fail-safe), router defaults")
    func builtInDefaults() throws {
        let config = try NodeConfiguration.load(yaml: "", source: "empty", registry: .builtIn)
        #expect(config.relay.enabled == false)
        #expect(Set(config.transports.keys) == Set(TransportRegistry.builtIn.names))
        #expect(config.enabledTransports.isEmpty)
        #expect(config.transports["tcp"]?.priority == 30)
        let router = config.routerConfiguration
        let defaults = RouterConfiguration()
        #expect(router.escalation.ackTimeoutMin == defaults.escalation.ackTimeoutMin)
        #expect(router.escalation.ackTimeoutMax == defaults.escalation.ackTimeoutMax)
        #expect(router.escalation.maxAttempts == defaults.escalation.maxAttempts)
        #expect(router.reconnect.initialDelay == defaults.reconnect.initialDelay)
        #expect(router.keepaliveInterval == defaults.keepaliveInterval)
        #expect(router.relayEnabled == false)
        #expect(try config.value(at: "node.log_level")?.text == "info")
    }

    @Test(
        "the default file enables relay and the transports that cross processes: mDNS 10, BLE 20, TCP 30 on 127.0.0.1:7420"
    )
    func defaultFile() throws {
        let config = try NodeConfiguration.load(file: nil, environment: [:], registry: .builtIn)
        #expect(config.relay.enabled)
        #expect(config.routerConfiguration.relayEnabled)
        // The in-process loopback transport cannot link two processes: it stays off.
        #expect(config.transports["loopback"]?.enabled == false)
        let tcp = try #require(config.transports["tcp"])
        #expect(tcp.enabled && tcp.priority == 30)
        #expect(tcp.configuration(as: TCPSettingsProbe.self) == nil)  // typed access is by concrete type
        #expect(try tcpListen(config) == ["127.0.0.1:7420"])
        #expect(config.enabledTransports.map(\.name) == ["mdns", "ble", "tcp"])
        #expect(config.enabledTransports.map(\.settings.priority) == [10, 20, 30])
    }

    @Test("Config/node.yaml and the embedded resource are the same file")
    func defaultFileMatchesResource() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let onDisk = try String(contentsOf: repository.appendingPathComponent("Config/node.yaml"), encoding: .utf8)
        #expect(NodeConfiguration.defaultFileContents() == onDisk)
    }

    @Test("every file in Config/examples is a valid config with relay on")
    func examples() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let directory = repository.appendingPathComponent("Config/examples")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(files.count >= 3)
        for file in files {
            let config = try NodeConfiguration.load(
                file: directory.appendingPathComponent(file).path,
                environment: [:],
                registry: .builtIn
            )
            #expect(config.relay.enabled, "\(file)")
            #expect(!config.enabledTransports.isEmpty, "\(file)")
        }
    }

    @Test("layers: file over defaults, environment over file, --set over environment")
    func layering() throws {
        let yaml = """
            relay:
              enabled: true
            escalation:
              max_attempts: 2
              ack_timeout_min_ms: 100
            transports:
              tcp:
                enabled: true
                listen: ["127.0.0.1:9000"]
            """
        let fileOnly = try NodeConfiguration.load(yaml: yaml, source: "f", registry: .builtIn)
        #expect(fileOnly.escalation.maxAttempts == 2)
        #expect(fileOnly.escalation.ackTimeoutMin == .milliseconds(100))
        #expect(fileOnly.escalation.ackTimeoutMax == EscalationConfiguration().ackTimeoutMax)

        let environment = [
            "SCMESH_ESCALATION_MAX_ATTEMPTS": "5",
            "SCMESH_TRANSPORTS_TCP_LISTEN": "127.0.0.1:1, 127.0.0.1:2",
            "SCMESH_RELAY_ENABLED": "false",
            "SCMESH_DATA_DIR": "/ignored",  // reserved, not a config key
            "PATH": "/usr/bin",
        ]
        let withEnvironment = try NodeConfiguration.load(
            yaml: yaml,
            source: "f",
            environment: environment,
            registry: .builtIn
        )
        #expect(withEnvironment.escalation.maxAttempts == 5)
        #expect(withEnvironment.escalation.ackTimeoutMin == .milliseconds(100))
        #expect(withEnvironment.relay.enabled == false)
        #expect(try tcpListen(withEnvironment) == ["127.0.0.1:1", "127.0.0.1:2"])

        let withFlags = try NodeConfiguration.load(
            yaml: yaml,
            source: "f",
            environment: environment,
            overrides: [
                "escalation.max_attempts=9", "relay.enabled=true", "transports.tcp.listen=[\"127.0.0.1:3\"]",
                "node.name=alpha", "keepalive_interval_ms=1500",
            ],
            registry: .builtIn
        )
        #expect(withFlags.escalation.maxAttempts == 9)
        #expect(withFlags.relay.enabled)
        #expect(try tcpListen(withFlags) == ["127.0.0.1:3"])
        #expect(withFlags.node.name == "alpha")
        #expect(withFlags.routerConfiguration.keepaliveInterval == .milliseconds(1500))
    }

    @Test(
        "sealing selects the router's SealingPolicy: relayed_only by default, always, anything else an error naming the key"
    )
    func sealing() throws {
        #expect(
            try NodeConfiguration.load(yaml: "", source: "f", registry: .builtIn).routerConfiguration.sealing
                == .relayedOnly
        )
        #expect(
            try NodeConfiguration.load(file: nil, environment: [:], registry: .builtIn).routerConfiguration.sealing
                == .relayedOnly
        )
        #expect(
            try NodeConfiguration.load(file: nil, environment: [:], registry: .builtIn).value(at: "sealing")?.text
                == "relayed_only"
        )
        let always = try NodeConfiguration.load(yaml: "sealing: always\n", source: "f", registry: .builtIn)
        #expect(always.routerConfiguration.sealing == .always)
        #expect(try always.yaml().contains("sealing: always"))
        let fromEnvironment = try NodeConfiguration.load(
            yaml: "",
            source: "f",
            environment: ["SCMESH_SEALING": "always"],
            registry: .builtIn
        )
        #expect(fromEnvironment.routerConfiguration.sealing == .always)
        let fromFlag = try NodeConfiguration.load(
            yaml: "sealing: always\n",
            source: "f",
            overrides: ["sealing=relayed_only"],
            registry: .builtIn
        )
        #expect(fromFlag.routerConfiguration.sealing == .relayedOnly)

        let message = try #require(loadError("relay:\n  enabled: true\nsealing: sometimes\n"))
        #expect(message.contains("sealing: expected relayed_only or always, got \"sometimes\""), "\(message)")
        #expect(message.contains("test.yaml line 3"), "\(message)")
        let flagged = try #require(loadError("", overrides: ["sealing=never"]))
        #expect(
            flagged.contains("sealing: expected relayed_only or always") && flagged.contains("--set sealing"),
            "\(flagged)"
        )
    }

    @Test("every key of the router's configuration is a config key, decoded straight into RouterConfiguration")
    func routerKeys() throws {
        let yaml = """
            relay: {enabled: true}
            max_message_size: 1000000
            reassembly: {max_messages: 3, timeout_ms: 5000}
            dedup_capacity: 100
            window_per_link: 16
            inbox_capacity: 32
            default_ttl: 4
            """
        let config = try NodeConfiguration.load(yaml: yaml, source: "f", registry: .builtIn)
        var expected = RouterConfiguration()
        expected.maxMessageSize = 1_000_000
        expected.reassembly.maxMessages = 3
        expected.reassembly.timeout = .seconds(5)
        expected.dedupCapacity = 100
        expected.windowPerLink = 16
        expected.inboxCapacity = 32
        expected.defaultTTL = 4
        #expect(config.routerConfiguration == expected)
        // Defaults are the router's own, but for relay (fail-safe: off).
        var defaults = RouterConfiguration()
        defaults.relayEnabled = false
        #expect(try NodeConfiguration.load(yaml: "", source: "f", registry: .builtIn).routerConfiguration == defaults)

        let unknown = try #require(loadError("reassembly:\n  max_mesages: 3\n"))
        #expect(
            unknown.contains(
                "unknown key reassembly.max_mesages (known keys of reassembly: max_messages, max_bytes, max_messages_per_peer, max_bytes_per_peer, timeout_ms)"
            ),
            "\(unknown)"
        )
        let ttl = try #require(loadError("default_ttl: 0\n"))
        #expect(ttl.contains("default_ttl: must be between 1 and 255, got 0 (from test.yaml line 1)"), "\(ttl)")
    }

    @Test(
        "routing: the default file lists the router's defaults, values reach RoutingConfiguration, config check prints them, bad values name the key"
    )
    func routingKeys() throws {
        let shipped = try NodeConfiguration.load(file: nil, environment: [:], registry: .builtIn)
        #expect(shipped.routerConfiguration.routing == RoutingConfiguration())
        #expect(NodeConfiguration.defaultFileContents().contains("routing:\n  announce_interval_ms: 3600000"))
        let yaml =
            "routing: {announce_interval_ms: 1000, max_hops: 4, route_max_age_ms: 4000, control_share: 0.5, hop_counts: false}\n"
        let config = try NodeConfiguration.load(
            yaml: yaml,
            source: "f",
            overrides: ["routing.announce_burst=3"],
            registry: .builtIn
        )
        var expected = RoutingConfiguration()
        expected.announceInterval = .seconds(1)
        expected.maxHops = 4
        expected.routeMaxAge = .seconds(4)
        expected.controlShare = 0.5
        expected.announceBurst = 3
        expected.hopCounts = false
        #expect(config.routerConfiguration.routing == expected)
        let printed = try config.yaml()
        for line in [
            "routing:", "  announce_interval_ms: 1000", "  announce_jitter: 0.25", "  max_hops: 4",
            "  route_max_age_ms: 4000",
            "  announces_per_second: 10.0", "  announce_burst: 3", "  control_share: 0.5", "  hop_counts: false",
        ] {
            #expect(printed.contains(line + "\n"), "\(line) in \(printed)")
        }
        let hops = try #require(loadError("routing:\n  max_hops: 0\n"))
        #expect(hops.contains("routing.max_hops: must be between 1 and 255, got 0"), "\(hops)")
        let unknown = try #require(loadError("routing:\n  max_hop: 3\n"))
        #expect(unknown.contains("unknown key routing.max_hop"), "\(unknown)")
        let notBool = try #require(loadError("routing:\n  hop_counts: 2\n"))
        #expect(notBool.contains("routing.hop_counts"), "\(notBool)")
    }

    @Test(
        "features: every one on by default and in the shipped file; each can be switched off; bad values name the key"
    )
    func featureKeys() throws {
        let shipped = try NodeConfiguration.load(file: nil, environment: [:], registry: .builtIn)
        #expect(shipped.routerConfiguration.features == .all)
        #expect(NodeConfiguration.defaultFileContents().contains("features:\n  routing: true"))
        let config = try NodeConfiguration.load(
            yaml: "features: {topics: false, receipts: false}\n",
            source: "f",
            overrides: ["features.routing=false"],
            registry: .builtIn
        )
        #expect(
            config.routerConfiguration.features == [
                .routeSync, .addresses, .flooding, .emergency, .sealedV2, .topicTime, .floodThrough,
            ]
        )
        #expect(
            config.routerConfiguration.features.consistent == [
                .addresses, .flooding, .emergency, .sealedV2, .floodThrough,
            ]
        )
        let printed = try config.yaml()
        for line in ["features:", "  routing: false", "  topics: false", "  receipts: false", "  flooding: true"] {
            #expect(printed.contains(line + "\n"), "\(line) in \(printed)")
        }
        let notBool = try #require(loadError("features:\n  topics: maybe\n"))
        #expect(notBool.contains("features.topics"), "\(notBool)")
        let unknown = try #require(loadError("features:\n  topic: false\n"))
        #expect(unknown.contains("features.topic"), "\(unknown)")
    }

    @Test("missing relay.enabled counts as off, even when the rest of relay: is present")
    func relayFailSafe() throws {
        #expect(try NodeConfiguration.load(yaml: "relay: {}", source: "f", registry: .builtIn).relay.enabled == false)
        #expect(
            try NodeConfiguration.load(yaml: "node: {name: x}", source: "f", registry: .builtIn).relay.enabled == false
        )
    }

    @Test(
        "an unknown key is an error naming its dotted path",
        arguments: [
            ("escalatoin:\n  max_attempts: 3\n", "unknown key escalatoin"),
            ("escalation:\n  max_attempt: 3\n", "unknown key escalation.max_attempt"),
            ("relay:\n  enabled: true\n  budget: 3\n", "unknown key relay.budget"),
            ("transports:\n  loopback:\n    mtuu: 64\n", "unknown key transports.loopback.mtuu"),
            ("transports:\n  tcp:\n    lisen: []\n", "transports.tcp.lisen"),
        ]
    )
    func unknownKey(yaml: String, expected: String) throws {
        let message = try #require(loadError(yaml))
        #expect(message.contains(expected), "\(message)")
        #expect(message.contains("test.yaml line"), "\(message)")
        #expect(!message.contains("\n"))
    }

    @Test(
        "a wrong type names the key and what was expected",
        arguments: [
            ("escalation:\n  max_attempts: many\n", "escalation.max_attempts: expected an integer, got \"many\""),
            ("relay:\n  enabled: perhaps\n", "relay.enabled: expected true or false, got \"perhaps\""),
            ("escalation: 3\n", "escalation: expected a mapping"),
            ("transports:\n  loopback:\n    loss: lots\n", "transports.loopback.loss: expected a number"),
            ("transports:\n  loopback:\n    priority: high\n", "transports.loopback.priority: expected an integer"),
            ("transports:\n  tcp:\n    listen: 7\n", "transports.tcp.listen: expected a list"),
            ("node:\n  log_level: loud\n", "node.log_level: expected one of trace, debug"),
            (
                "escalation:\n  ack_timeout_min_ms: 500\n  ack_timeout_max_ms: 100\n",
                "escalation.ack_timeout_max_ms: must not be below"
            ),
            ("transports:\n  loopback:\n    mtu: 2\n", "transports.loopback.mtu: must be at least"),
            ("transports:\n  tcp:\n    listen: [\"nowhere\"]\n", "transports.tcp.listen"),
        ]
    )
    func wrongType(yaml: String, expected: String) throws {
        let message = try #require(loadError(yaml))
        #expect(message.contains(expected), "\(message)")
        #expect(!message.contains("\n"))
    }

    @Test("an unknown transport is named with the registered ones")
    func unknownTransport() throws {
        let message = try #require(loadError("transports:\n  pigeon:\n    enabled: true\n"))
        #expect(message.contains("transports.pigeon"), "\(message)")
        #expect(message.contains("unknown transport"), "\(message)")
        #expect(message.contains("loopback"), "\(message)")
    }

    @Test("environment and --set errors say where the value came from")
    func layerErrors() throws {
        let fromEnvironment = try #require(loadError("", environment: ["SCMESH_ESCALATION_MAX_ATTEMPTS": "x"]))
        #expect(fromEnvironment.contains("escalation.max_attempts"), "\(fromEnvironment)")
        #expect(fromEnvironment.contains("SCMESH_ESCALATION_MAX_ATTEMPTS"), "\(fromEnvironment)")

        let unknownVariable = try #require(loadError("", environment: ["SCMESH_ESCALATION_MAX_ATTEMPT": "1"]))
        #expect(unknownVariable.contains("SCMESH_ESCALATION_MAX_ATTEMPT"), "\(unknownVariable)")
        let unknownTransportKey = try #require(loadError("", environment: ["SCMESH_TRANSPORTS_TCP_LISTN": "x"]))
        #expect(unknownTransportKey.contains("SCMESH_TRANSPORTS_TCP_LISTN"), "\(unknownTransportKey)")
        // Tooling variables outside the config sections are not config keys.
        #expect(loadError("", environment: ["SCMESH_AVAHI_DIR": "/tmp/x"]) == nil)

        let fromFlag = try #require(loadError("", overrides: ["relay.enabled=maybe"]))
        #expect(fromFlag.contains("relay.enabled") && fromFlag.contains("--set"), "\(fromFlag)")

        let unknownFlag = try #require(loadError("", overrides: ["relay.enable=true"]))
        #expect(unknownFlag.contains("unknown key relay.enable"), "\(unknownFlag)")

        let noEquals = try #require(loadError("", overrides: ["relay.enabled"]))
        #expect(noEquals.contains("KEY=VALUE"), "\(noEquals)")
    }

    @Test("JSON is accepted")
    func json() throws {
        let config = try NodeConfiguration.load(
            yaml:
                #"{"relay": {"enabled": true}, "escalation": {"max_attempts": 6}, "transports": {"loopback": {"enabled": true, "loss": 0.25}}}"#,
            source: "f.json",
            registry: .builtIn
        )
        #expect(config.relay.enabled)
        #expect(config.escalation.maxAttempts == 6)
        #expect(config.transports["loopback"]?.configuration(as: LoopbackSettings.self)?.transport.loss == 0.25)
    }

    @Test("the effective config printed as YAML loads back to the same values")
    func roundTrip() throws {
        let config = try NodeConfiguration.load(
            file: nil,
            environment: [:],
            overrides: ["node.name=beta", "escalation.rtt_multiplier=2.5"],
            registry: .builtIn
        )
        let yaml = try config.yaml()
        #expect(yaml.contains("rtt_multiplier: 2.5"))
        let again = try NodeConfiguration.load(yaml: yaml, source: "printed", registry: .builtIn)
        #expect(try again.yaml() == yaml)
        #expect(again.node.name == "beta")
        #expect(again.escalation == config.escalation)
    }

    @Test("a registry override adds transports under new names, task-locally")
    func registryOverride() throws {
        let registry = TransportRegistry([.loopback(), .loopback(name: "lo2", defaultPriority: 20)])
        let yaml = "transports:\n  lo2:\n    enabled: true\n    mtu: 64\n"
        let config = try TransportRegistry.withOverride(registry) {
            #expect(TransportRegistry.current.names == ["lo2", "loopback"])
            return try NodeConfiguration.load(yaml: yaml, source: "f")
        }
        #expect(config.transports["lo2"]?.priority == 20)
        #expect(config.transports["lo2"]?.configuration(as: LoopbackSettings.self)?.transport.mtu == 64)
        #expect(config.transports["tcp"] == nil)
        // Outside the override the process-wide registry is untouched.
        #expect(TransportRegistry.current.factory(named: "lo2") == nil)
        #expect(loadError(yaml)?.contains("transports.lo2") == true)
    }

    @Test("the default data directory follows SCMESH_DATA_DIR, then XDG_DATA_HOME, then HOME")
    func dataDirectoryDefault() {
        #expect(
            DataDirectory.defaultPath(environment: ["SCMESH_DATA_DIR": "/a", "XDG_DATA_HOME": "/b", "HOME": "/c"])
                == "/a"
        )
        #expect(DataDirectory.defaultPath(environment: ["XDG_DATA_HOME": "/b", "HOME": "/c"]) == "/b/scmesh")
        #expect(DataDirectory.defaultPath(environment: ["HOME": "/c"]) == "/c/.local/share/scmesh")
    }
}

/// A settings type no factory uses, to check typed access.
private struct TCPSettingsProbe: TransportConfiguration {
    init() {}
}

private func tcpListen(_ config: NodeConfiguration) throws -> [String] {
    try #require(try config.value(at: "transports.tcp.listen")?.texts)
}

@Suite("Config: store")
struct StoreConfigTests {
    @Test(
        "store.* keys: defaults match the store's, values reach StoreConfiguration, the path is relative to the data dir"
    )
    func storeKeys() throws {
        let defaults = try NodeConfiguration.load(yaml: "", source: "test", environment: [:], registry: .builtIn)
        #expect(defaults.store.storeConfiguration == StoreConfiguration())
        #expect(defaults.store.filePath(dataDirectory: "/d") == "/d/store.sqlite")
        let yaml = """
            store:
              path: sub/my.sqlite
              default_expiry_seconds: 60
              dedup_retention_seconds: 120
              outbox_max_messages_per_peer: 5
              inbox_capacity: 7
              history_limit: 9
            """
        let config = try NodeConfiguration.load(
            yaml: yaml,
            source: "test",
            environment: ["SCMESH_STORE_OUTBOX_MAX_BYTES": "1000"],
            registry: .builtIn
        )
        #expect(config.store.filePath(dataDirectory: "/d") == "/d/sub/my.sqlite")
        let store = config.store.storeConfiguration
        #expect(store.defaultExpiry == .seconds(60))
        #expect(store.dedupRetention == .seconds(120))
        #expect(store.outboxMaxMessagesPerPeer == 5)
        #expect(store.outboxMaxBytes == 1000)
        #expect(store.inboxCapacity == 7)
        #expect(store.historyLimit == 9)
        #expect(try config.yaml().contains("store:\n  path: sub/my.sqlite\n  default_expiry_seconds: 60"))
        let absolute = try NodeConfiguration.load(
            yaml: "",
            source: "t",
            overrides: ["store.path=/x/s.sqlite"],
            registry: .builtIn
        )
        #expect(absolute.store.filePath(dataDirectory: "/d") == "/x/s.sqlite")
    }

    @Test(
        "a broken store value names its key",
        arguments: [
            ("store: {outbox_max_messages: 0}", "store.outbox_max_messages: must be at least 1, got 0"),
            ("store: {default_expiry_seconds: many}", "store.default_expiry_seconds: expected an integer"),
            (
                "store: {default_expiry_seconds: 100, dedup_retention_seconds: 50}",
                "store.dedup_retention_seconds: must be at least store.default_expiry_seconds (100)"
            ),
            ("store: {path: \"\"}", "store.path: must be a file path or null"),
            ("store: {histroy_limit: 3}", "unknown key store.histroy_limit (known keys of store: path,"),
            ("node: {inbox_capacity: 3}", "node.inbox_capacity is now store.inbox_capacity"),
        ]
    )
    func brokenStoreValue(yaml: String, expected: String) throws {
        #expect {
            _ = try NodeConfiguration.load(yaml: yaml, source: "test.yaml", environment: [:], registry: .builtIn)
        } throws: { error in
            "\(error)".contains(expected) && "\(error)".contains("test.yaml")
        }
    }
}
