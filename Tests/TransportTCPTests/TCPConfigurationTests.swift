import Foundation
import MeshCore
import Testing
import TransportTCP

/// Decoding, defaults and validation of `transports.tcp`.
struct TCPConfigurationTests {
    typealias Configuration = TCPTransport.Configuration

    func decode(_ json: String) throws -> Configuration {
        try JSONDecoder().decode(Configuration.self, from: Data(json.utf8))
    }

    @Test func emptySectionGivesTheDocumentedDefaults() throws {
        let config = try decode("{}")
        #expect(config == Configuration())
        #expect(config.listen == ["127.0.0.1:7420"])
        #expect(config.bootstrap == [])
        #expect(config.maxFrameSize == 65535)
        #expect(config.maxInbound == 128)
        #expect(config.maxPerAddress == 8)
        #expect(config.connectTimeoutMilliseconds == 5000)
        try config.validate()
    }

    @Test func snakeCaseKeysDecodeAndRoundTrip() throws {
        let config = try decode(
            """
            {"listen": ["[::1]:0"], "bootstrap": ["seed.example.org:7420"], "max_frame_size": 1024,
             "max_inbound": 4, "max_per_address": 2, "connect_timeout_ms": 250}
            """
        )
        #expect(config.listen == ["[::1]:0"])
        #expect(config.bootstrap == ["seed.example.org:7420"])
        #expect(config.maxFrameSize == 1024)
        #expect(config.maxInbound == 4)
        #expect(config.maxPerAddress == 2)
        #expect(config.connectTimeoutMilliseconds == 250)
        try config.validate()
        let encoded = try JSONEncoder().encode(config)
        let keys = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any]).keys
        #expect(Set(keys) == Set(Configuration.keys))
        #expect(try JSONDecoder().decode(Configuration.self, from: encoded) == config)
    }

    @Test func unknownKeysAreRejectedByName() throws {
        do {
            _ = try decode(#"{"max_frame_sise": 1024}"#)
            Issue.record("a misspelt key was accepted")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.codingPath.last?.stringValue == "max_frame_sise")
            #expect(context.debugDescription.contains("max_frame_sise"))
            #expect(context.debugDescription.contains("max_frame_size"))
        }
    }

    @Test(arguments: [
        (Configuration(maxFrameSize: 70_000), "tcp.max_frame_size"),
        (Configuration(maxFrameSize: 15), "tcp.max_frame_size"),
        (Configuration(maxInbound: 0), "tcp.max_inbound"),
        (Configuration(maxPerAddress: 0), "tcp.max_per_address"),
        (Configuration(connectTimeoutMilliseconds: 0), "tcp.connect_timeout_ms"),
        (Configuration(listen: ["localhost:7420"]), "tcp.listen"),
        (Configuration(listen: ["127.0.0.1"]), "tcp.listen"),
        (Configuration(listen: ["::1:7420"]), "tcp.listen"),
        (Configuration(bootstrap: ["seed.example.org"]), "tcp.bootstrap"),
        (Configuration(bootstrap: ["seed.example.org:0"]), "tcp.bootstrap"),
        (Configuration(bootstrap: ["seed.example.org:70000"]), "tcp.bootstrap"),
    ])
    func validationNamesTheBadKey(config: Configuration, key: String) {
        do {
            try config.validate()
            Issue.record("\(config) passed validation")
        } catch let error as MeshError {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.hasPrefix(key + " "), "\(error.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func wrongTypeNamesTheKey() throws {
        do {
            _ = try decode(#"{"max_inbound": "many"}"#)
            Issue.record("a string was accepted as max_inbound")
        } catch DecodingError.typeMismatch(_, let context) {
            #expect(context.codingPath.last?.stringValue == "max_inbound")
        }
    }
}
