import MeshCore
import Testing

@testable import TransportTCP

/// The address notation of TCP hints and config.
struct TCPAddressTests {
    @Test(arguments: [
        ("127.0.0.1:7420", "127.0.0.1", 7420),
        ("[::1]:7420", "::1", 7420),
        ("[fe80::1%veth0]:7420", "fe80::1%veth0", 7420),
        ("seed.example.org:1", "seed.example.org", 1),
        ("0.0.0.0:0", "0.0.0.0", 0),
    ])
    func parsesAndPrintsBack(text: String, host: String, port: Int) throws {
        let address = try TCPAddress(text)
        #expect(address.host == host)
        #expect(address.port == port)
        #expect(address.description == text)
        #expect(TCPAddress(host: host, port: port) == address)
    }

    @Test(arguments: ["127.0.0.1", "::1:7420", "[::1]", "[::1]7420", ":7420", "host:99999", "host:port", "[::1:7420"])
    func rejectsMalformedText(text: String) {
        #expect(throws: MeshError.self) { try TCPAddress(text) }
    }

    @Test func knowsLiteralsFromNames() throws {
        #expect(try TCPAddress("127.0.0.1:1").isIPLiteral)
        #expect(try TCPAddress("[::1]:1").isIPLiteral)
        #expect(try TCPAddress("[::1%lo]:1").isIPLiteral)
        #expect(try !TCPAddress("localhost:1").isIPLiteral)
        #expect(try !TCPAddress("seed.example.org:1").isIPLiteral)
    }
}

/// The zone of a scoped IPv6 address reaches the socket address (internal API).
struct TCPAddressZoneTests {
    @Test func zoneBecomesTheScopeIDAndPrintsBack() throws {
        let address = try TCPAddress("[fe80::1%lo]:7420")
        let socketAddress = try #require(try address.socketAddress())
        #expect(TCPAddress.scopeID(of: socketAddress) == 1)  // lo is interface 1
        #expect(TCPAddress.text(of: socketAddress) == "[fe80::1%lo]:7420")

        let numeric = try #require(try TCPAddress("[fe80::2%1]:80").socketAddress())
        #expect(TCPAddress.scopeID(of: numeric) == 1)
        #expect(TCPAddress.text(of: numeric) == "[fe80::2%lo]:80")

        let plain = try #require(try TCPAddress("[::1]:80").socketAddress())
        #expect(TCPAddress.scopeID(of: plain) == 0)
        #expect(TCPAddress.text(of: plain) == "[::1]:80")
        #expect(try TCPAddress("localhost:80").socketAddress() == nil)
        #expect(throws: MeshError.self) { try TCPAddress("[fe80::1%nosuchif0]:80").socketAddress() }
    }
}
