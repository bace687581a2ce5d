import Foundation
import Logging
import MeshCore
import Testing

@testable import TransportMDNS

@Suite("MDNSTransport.Configuration")
struct MDNSConfigurationTests {
    private func decode(_ json: String) throws -> MDNSTransport.Configuration {
        try JSONDecoder().decode(MDNSTransport.Configuration.self, from: Data(json.utf8))
    }

    @Test("an empty section gives the documented defaults, and they validate")
    func defaults() throws {
        let configuration = try decode("{}")
        #expect(configuration == MDNSTransport.Configuration())
        #expect(configuration.discoveryMode == .normal)
        #expect(configuration.serviceType == "_scmesh._tcp")
        #expect(configuration.serviceName == "")
        #expect(configuration.interfaces == [])
        #expect(configuration.listen == ["0.0.0.0:0"])
        #expect(configuration.waitForDaemon)
        try configuration.validate()
    }

    @Test("snake_case keys decode, and encoding round-trips")
    func snakeCaseKeys() throws {
        let configuration = try decode(
            """
            {"discovery_mode": "paranoid", "service_type": "_other._tcp", "service_name": "box",
             "interfaces": ["lo", "veth1"], "listen": ["127.0.0.1:0"], "ipv6": false,
             "wait_for_daemon": false, "retry_interval_ms": 500, "max_frame_size": 1024,
             "connect_timeout_ms": 100}
            """
        )
        #expect(configuration.discoveryMode == .paranoid)
        #expect(configuration.serviceType == "_other._tcp")
        #expect(configuration.serviceName == "box")
        #expect(configuration.interfaces == ["lo", "veth1"])
        #expect(configuration.listen == ["127.0.0.1:0"])
        #expect(!configuration.ipv6)
        #expect(!configuration.waitForDaemon)
        #expect(configuration.retryIntervalMilliseconds == 500)
        #expect(configuration.maxFrameSize == 1024)
        #expect(configuration.connectTimeoutMilliseconds == 100)
        let again = try JSONDecoder().decode(
            MDNSTransport.Configuration.self,
            from: try JSONEncoder().encode(configuration)
        )
        #expect(again == configuration)
    }

    @Test("an unknown key is rejected by name")
    func unknownKey() throws {
        do {
            _ = try decode(#"{"discovery": "normal"}"#)
            Issue.record("decoding accepted an unknown key")
        } catch let DecodingError.dataCorrupted(context) {
            #expect(context.codingPath.last?.stringValue == "discovery")
            #expect(context.debugDescription.contains("discovery_mode"))
        }
    }

    @Test("an unknown discovery mode is a decoding error at that key")
    func unknownMode() throws {
        do {
            _ = try decode(#"{"discovery_mode": "loud"}"#)
            Issue.record("decoding accepted discovery_mode loud")
        } catch let DecodingError.dataCorrupted(context) {
            #expect(context.codingPath.last?.stringValue == "discovery_mode")
        }
    }

    @Test(
        "validate names the bad key",
        arguments: [
            (#"{"service_type": "scmesh"}"#, "mdns.service_type"),
            (#"{"service_type": "_scmesh._udp"}"#, "mdns.service_type"),
            (#"{"service_type": "_a_very_long_service_name._tcp"}"#, "mdns.service_type"),
            (#"{"service_name": "\#(String(repeating: "x", count: 64))"}"#, "mdns.service_name"),
            (#"{"interfaces": [""]}"#, "mdns.interfaces"),
            (#"{"listen": []}"#, "mdns.listen"),
            (#"{"retry_interval_ms": 10}"#, "mdns.retry_interval_ms"),
            (#"{"max_frame_size": 70000}"#, "mdns.max_frame_size"),
            (#"{"connect_timeout_ms": 0}"#, "mdns.connect_timeout_ms"),
        ]
    )
    func validateNamesKey(json: String, key: String) throws {
        let configuration = try decode(json)
        let error = #expect(throws: MeshError.self) { try configuration.validate() }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.hasPrefix(key + " ") == true, "\(error?.message ?? "")")
    }

    @Test("discovery modes: what is published")
    func modes() {
        #expect(MDNSTransport.DiscoveryMode.normal.publishes && MDNSTransport.DiscoveryMode.normal.revealsIdentity)
        #expect(MDNSTransport.DiscoveryMode.cautious.publishes && !MDNSTransport.DiscoveryMode.cautious.revealsIdentity)
        #expect(!MDNSTransport.DiscoveryMode.paranoid.publishes)
    }
}

@Suite("TXT record and service address")
struct MDNSRecordTests {
    @Test("our TXT strings: version first, then the peer ID")
    func publishedStrings() {
        let peer = PeerID.random()
        #expect(MDNSTXTRecord(identity: peer).strings == ["v=1", "id=\(peer.hex)"])
        #expect(MDNSTXTRecord(identity: nil).strings == ["v=1"])
    }

    @Test("decoding: first key wins, keys are case-insensitive, Avahi's cookie is dropped, bad IDs are nil")
    func decoding() {
        let peer = PeerID.random()
        let record = MDNSTXTRecord(strings: [
            "ID=\(peer.hex)", "id=ffff", "flag", "org.freedesktop.Avahi.cookie=123", "", "=novalue", "k=a=b",
        ])
        #expect(record.fields == ["id": peer.hex, "flag": "", "k": "a=b"])
        #expect(record.peerID == peer)
        #expect(MDNSTXTRecord(strings: ["id=12"]).peerID == nil)
    }

    @Test("compatibility: no version, or major version 1")
    func compatibility() {
        #expect(MDNSTXTRecord(strings: []).isCompatible)
        #expect(MDNSTXTRecord(strings: ["v=1"]).isCompatible)
        #expect(MDNSTXTRecord(strings: ["v=1.3"]).isCompatible)
        #expect(!MDNSTXTRecord(strings: ["v=2"]).isCompatible)
    }

    @Test("endpoints: IPv4, IPv6, and IPv6 link-local with the interface scope")
    func endpoints() {
        func service(_ address: String, v6: Bool, interface: String = "veth1") -> MDNSService {
            MDNSService(
                name: "n",
                interfaceName: interface,
                hostName: "h.local",
                address: address,
                isIPv6: v6,
                port: 7420,
                txt: MDNSTXTRecord(strings: ["v=1"])
            )
        }
        #expect(service("10.0.0.2", v6: false).endpoint == "10.0.0.2:7420")
        #expect(service("fd00::2", v6: true).endpoint == "[fd00::2]:7420")
        #expect(service("fe80::1", v6: true).endpoint == "[fe80::1%veth1]:7420")
        #expect(service("FEBF::1", v6: true).endpoint == "[FEBF::1%veth1]:7420")
        #expect(service("fec0::1", v6: true).endpoint == "[fec0::1]:7420")
        let hint = service("10.0.0.2", v6: false).hint(transport: "mdns")
        #expect(hint == PeerHint(transport: "mdns", address: "10.0.0.2:7420", metadata: ["v": "1"]))
    }

    @Test("publish targets: one per IP family, [::] is dual-stack, ipv6 off keeps IPv4 only")
    func publishTargets() {
        typealias T = MDNSPublishTarget
        #expect(T.targets(boundAddresses: ["127.0.0.1:7000"], ipv6: true) == [T(family: .ipv4, port: 7000)])
        #expect(T.targets(boundAddresses: ["[::]:7000"], ipv6: true) == [T(family: .any, port: 7000)])
        #expect(T.targets(boundAddresses: ["[::]:7000"], ipv6: false) == [T(family: .ipv4, port: 7000)])
        #expect(T.targets(boundAddresses: ["[fe80::1%eth0]:7000"], ipv6: false) == [])
        #expect(
            T.targets(boundAddresses: ["0.0.0.0:7000", "[::]:7001"], ipv6: true)
                == [T(family: .ipv4, port: 7000), T(family: .ipv6, port: 7001)]
        )
        #expect(
            T.targets(boundAddresses: ["0.0.0.0:7000", "10.0.0.1:7002", "[::1]:7001"], ipv6: true)
                == [T(family: .ipv4, port: 7000), T(family: .ipv6, port: 7001)]
        )
        #expect(T.targets(boundAddresses: ["nonsense", "1.2.3.4:0"], ipv6: true) == [])
    }

    @Test("the port of a bound address")
    func port() {
        #expect(MDNSTransport.port(of: "127.0.0.1:4242") == 4242)
        #expect(MDNSTransport.port(of: "[::]:7") == 7)
        #expect(MDNSTransport.port(of: "nonsense") == nil)
    }
}

#if !canImport(CAvahi)
@Suite("Built without Avahi")
struct MDNSWithoutAvahiTests {
    @Test("listen throws transportUnavailable with one line")
    func unavailable() async throws {
        let transport = MDNSTransport(configuration: .init(listen: ["127.0.0.1:0"]))
        let error = await #expect(throws: MeshError.self) {
            try await transport.listen(
                context: TransportContext(localPeerID: .random(), logger: .init(label: "test")) { _ in }
            )
        }
        #expect(error?.code == .transportUnavailable)
        #expect(error?.message.contains("MDNS trait") == true)
        #expect(error?.message.contains("\n") == false)
    }
}
#endif
