import Foundation
import MeshCore
import MeshCrypto
import Synchronization
import TransportBLE
import TransportLoopback
import TransportMDNS
import TransportTCP

extension TransportRegistry {
    /// The transports the node ships with. To add one: write its
    /// `TransportFactory` (a static member like ``TransportFactory/loopback(name:defaultPriority:)``)
    /// and list it here.
    public static var builtIn: TransportRegistry {
        TransportRegistry([
            .loopback(),
            .tcp(),
            .mdns(),
            .ble(),
        ])
    }
}

extension TransportFactory {
    /// The in-memory loopback transport (`MeshTesting.LoopbackTransport`): nodes in
    /// one process on the same named network find and reach each other. For tests,
    /// simulations and a default config that runs anywhere.
    /// - Parameters:
    ///   - name: the config key and transport name; register under several names to
    ///     model several media.
    ///   - defaultPriority: priority when the config sets none.
    public static func loopback(name: String = "loopback", defaultPriority: Int = 0) -> TransportFactory {
        TransportFactory(
            name: name,
            defaultPriority: defaultPriority,
            summary: "in-memory transport between nodes of one process (tests and simulations)",
            configuration: LoopbackSettings.self
        ) { settings, context in
            LoopbackTransport(
                name: context.name,
                address: settings.address ?? context.identity.peerID.hex,
                network: LoopbackNetworks.named(settings.network),
                configuration: settings.transport
            )
        }
    }
}

extension TransportFactory {
    /// TCP over IP (`TransportTCP.TCPTransport`): listens on `listen`, dials the
    /// `bootstrap` peers and redials them with backoff.
    /// - Parameters:
    ///   - name: the config key and transport name.
    ///   - defaultPriority: priority when the config sets none (30: the internet is
    ///     the last resort after the LAN and BLE, as in the seed app).
    public static func tcp(name: String = "tcp", defaultPriority: Int = 30) -> TransportFactory {
        TransportFactory(
            name: name,
            defaultPriority: defaultPriority,
            summary: "TCP over IP: listen addresses and bootstrap peers",
            configuration: TCPTransport.Configuration.self,
            validate: { try $0.validate() }
        ) { settings, context in
            TCPTransport(configuration: settings, name: context.name)
        }
    }
}

extension TCPTransport.Configuration: TransportConfiguration {
    /// The defaults: listen on 127.0.0.1:7420, no bootstrap peers.
    public init() {
        self.init(listen: Self.defaultListen)
    }
}

extension TransportFactory {
    /// Local-network discovery over Avahi/mDNS (`TransportMDNS.MDNSTransport`):
    /// publishes `_scmesh._tcp` and dials what it resolves over TCP links.
    /// - Parameters:
    ///   - name: the config key and transport name.
    ///   - defaultPriority: priority when the config sets none (10: the LAN first).
    public static func mdns(name: String = "mdns", defaultPriority: Int = 10) -> TransportFactory {
        TransportFactory(
            name: name,
            defaultPriority: defaultPriority,
            summary: "local network: Avahi/mDNS discovery, data over TCP",
            configuration: MDNSTransport.Configuration.self,
            validate: { try $0.validate() }
        ) { settings, context in
            MDNSTransport(configuration: settings, name: context.name)
        }
    }

    /// Bluetooth LE through BlueZ (`TransportBLE.BLETransport`): advertising,
    /// scanning and L2CAP LE credit-based channels. Unavailable (one log line) on
    /// kernels without Bluetooth.
    /// - Parameter defaultPriority: priority when the config sets none (20).
    public static func ble(defaultPriority: Int = 20) -> TransportFactory {
        TransportFactory(
            name: "ble",
            defaultPriority: defaultPriority,
            summary: "Bluetooth LE: BlueZ advertising, scanning and L2CAP channels",
            configuration: BLETransport.Configuration.self,
            validate: { try $0.validate() }
        ) { settings, _ in
            BLETransport(configuration: settings, beaconHash: { NoiseHash.sha256.hash($0) })
        }
    }
}

extension MDNSTransport.Configuration: TransportConfiguration {
    /// The defaults (normal discovery, `_scmesh._tcp`, listen on any address, port 0).
    public init() {
        self.init(discoveryMode: .normal)
    }
}

extension BLETransport.Configuration: TransportConfiguration {}

/// The `transports.loopback` section: the node's keys plus `LoopbackTransport`'s knobs
/// (`mtu`, `latency_ms`, `loss`, `buffer_frames`, `discovery`, `bitrate`).
public struct LoopbackSettings: TransportConfiguration, Hashable {
    /// Name of the in-process network; transports on the same one find each other.
    public var network: String = "default"
    /// This node's address on it; `nil` uses the node's peer ID in hex.
    public var address: String?
    /// The transport's own knobs.
    public var transport = LoopbackTransport.Configuration()

    /// Defaults: network "default", address = peer ID, the transport's defaults.
    public init() {}

    enum CodingKeys: String, CodingKey {
        case network, address
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        network = try container.decodeIfPresent(String.self, forKey: .network) ?? "default"
        address = try container.decodeIfPresent(String.self, forKey: .address)
        transport = try LoopbackTransport.Configuration(from: decoder)
        do {
            try transport.validate()
        } catch {
            // The transport's message starts with the key: "mtu: must be at least ...".
            let key = error.message.split(separator: ":").first.map(String.init) ?? ""
            let rest = error.message.drop(while: { $0 != ":" }).dropFirst().trimmingCharacters(in: .whitespaces)
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath + [AnyCodingKey(key)],
                    debugDescription: rest.isEmpty ? error.message : rest
                )
            )
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(network, forKey: .network)
        try container.encode(address, forKey: .address)
        try transport.encode(to: encoder)
    }
}

/// Process-wide named ``LoopbackNetwork``s, so nodes built from configs in one
/// process meet on the network their configs name.
public enum LoopbackNetworks {
    private static let networks = Mutex<[String: LoopbackNetwork]>([:])

    /// The network with this name, created on first use.
    public static func named(_ name: String) -> LoopbackNetwork {
        networks.withLock { networks in
            if let existing = networks[name] { return existing }
            let network = LoopbackNetwork()
            networks[name] = network
            return network
        }
    }
}
