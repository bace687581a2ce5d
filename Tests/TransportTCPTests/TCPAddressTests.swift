import MeshCore
import Testing
import TransportTCP

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
