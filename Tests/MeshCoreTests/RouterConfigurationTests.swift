import Foundation
import MeshCore
import Testing

/// The router's configuration types decode the node's config keys (snake_case,
/// `*_ms` integers), fill in defaults for missing keys and reject unknown ones.
@Suite struct RouterConfigurationTests {
    private func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(json.utf8))
    }

    private func decode(_ json: String) throws -> RouterConfiguration {
        try decode(RouterConfiguration.self, json)
    }

    /// The coding path (dotted) and description of a decoding failure.
    private func failure(_ json: String) -> (path: String, description: String)? {
        do {
            _ = try decode(RouterConfiguration.self, json)
            return nil
        } catch let DecodingError.dataCorrupted(context) {
            return (context.codingPath.map(\.stringValue).joined(separator: "."), context.debugDescription)
        } catch let DecodingError.typeMismatch(_, context) {
            return (context.codingPath.map(\.stringValue).joined(separator: "."), "type mismatch")
        } catch let DecodingError.valueNotFound(_, context) {
            return (context.codingPath.map(\.stringValue).joined(separator: "."), "null")
        } catch {
            return ("", "\(error)")
        }
    }

    @Test func emptyDocumentIsTheDefaults() throws {
        #expect(try decode("{}") == RouterConfiguration())
        #expect(try decode(EscalationConfiguration.self, "{}") == EscalationConfiguration())
        #expect(try decode(ReconnectConfiguration.self, "{}") == ReconnectConfiguration())
        #expect(try decode(ReassemblyLimits.self, "{}") == ReassemblyLimits())
    }

    @Test func missingKeysTakeTheirDefaults() throws {
        let config = try decode(#"{"escalation": {"max_attempts": 2}, "reconnect": {"jitter": 0}, "relay": {}}"#)
        var expected = RouterConfiguration()
        expected.escalation.maxAttempts = 2
        expected.reconnect.jitter = 0
        #expect(config == expected)
    }

    @Test func keysAreTheNodeYAMLKeys() throws {
        let json = #"""
            {"relay": {"enabled": false},
             "escalation": {"ack_timeout_min_ms": 100, "ack_timeout_max_ms": 2000, "rtt_multiplier": 2.5,
                            "max_attempts": 3, "degrade_after_failures": 5},
             "reconnect": {"initial_delay_ms": 20, "max_delay_ms": 200, "jitter": 0.5},
             "keepalive_interval_ms": 1500, "link_write_stall_timeout_ms": 4000, "handshake_timeout_ms": 250, "sealing": "always",
             "max_message_size": 1000, "reassembly": {"max_messages": 2, "max_bytes": 3000, "timeout_ms": 400},
             "dedup_capacity": 10, "window_per_link": 8, "inbox_capacity": 16, "default_ttl": 3}
            """#
        let config = try decode(json)
        let expected = RouterConfiguration(
            relayEnabled: false,
            escalation: EscalationConfiguration(
                ackTimeoutMin: .milliseconds(100),
                ackTimeoutMax: .seconds(2),
                rttMultiplier: 2.5,
                maxAttempts: 3,
                degradeAfterFailures: 5
            ),
            reconnect: ReconnectConfiguration(
                initialDelay: .milliseconds(20),
                maxDelay: .milliseconds(200),
                jitter: 0.5
            ),
            keepaliveInterval: .milliseconds(1500),
            linkWriteStallTimeout: .seconds(4),
            handshakeTimeout: .milliseconds(250),
            maxMessageSize: 1000,
            reassembly: ReassemblyLimits(maxMessages: 2, maxBytes: 3000, timeout: .milliseconds(400)),
            dedupCapacity: 10,
            windowPerLink: 8,
            inboxCapacity: 16,
            defaultTTL: 3,
            sealing: .always
        )
        #expect(config == expected)
        // Encoding writes the same keys back.
        #expect(try decode(String(decoding: JSONEncoder().encode(config), as: UTF8.self)) == config)
        let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(config)) as? [String: Any])
        #expect(
            Set(object.keys) == [
                "relay", "escalation", "reconnect", "keepalive_interval_ms", "link_write_stall_timeout_ms",
                "handshake_timeout_ms", "sealing",
                "max_unauthenticated_links", "max_message_size", "reassembly", "dedup_capacity", "window_per_link",
                "inbox_capacity", "default_ttl",
                "routing", "flood", "features",
            ]
        )
        #expect(object["sealing"] as? String == "always")
        #expect(object["keepalive_interval_ms"] as? Int == 1500)
        #expect((object["escalation"] as? [String: Any])?["ack_timeout_max_ms"] as? Int == 2000)
    }

    @Test(
        arguments: [
            (#"{"escalatoin": {}}"#, "escalatoin", "unknown router key 'escalatoin'"),
            (#"{"escalation": {"max_attempt": 3}}"#, "escalation.max_attempt", "unknown escalation key 'max_attempt'"),
            (#"{"relay": {"enabled": true, "budget": 3}}"#, "relay.budget", "unknown relay key 'budget'"),
            (#"{"reconnect": {"jiter": 0.1}}"#, "reconnect.jiter", "unknown reconnect key"),
            (#"{"reassembly": {"max_mesages": 1}}"#, "reassembly.max_mesages", "unknown reassembly key"),
        ])
    func unknownKeysAreRejected(json: String, path: String, description: String) {
        let failure = failure(json)
        #expect(failure?.path == path)
        #expect(failure?.description.contains(description) == true, "\(failure?.description ?? "")")
    }

    @Test(
        arguments: [
            (
                #"{"escalation": {"ack_timeout_min_ms": 500, "ack_timeout_max_ms": 100}}"#,
                "escalation.ack_timeout_max_ms",
                "must not be below ack_timeout_min_ms (500), got 100"
            ),
            (
                #"{"escalation": {"ack_timeout_min_ms": 0}}"#, "escalation.ack_timeout_min_ms",
                "must be at least 1, got 0"
            ),
            (#"{"escalation": {"rtt_multiplier": 0}}"#, "escalation.rtt_multiplier", "must be above 0, got 0.0"),
            (
                #"{"reconnect": {"initial_delay_ms": 5000, "max_delay_ms": 10}}"#, "reconnect.max_delay_ms",
                "must not be below initial_delay_ms (5000), got 10"
            ),
            (#"{"reconnect": {"jitter": 2}}"#, "reconnect.jitter", "must be between 0 and 1, got 2.0"),
            (#"{"keepalive_interval_ms": 0}"#, "keepalive_interval_ms", "must be at least 1, got 0"),
            (#"{"link_write_stall_timeout_ms": 0}"#, "link_write_stall_timeout_ms", "must be at least 1, got 0"),
            (#"{"handshake_timeout_ms": -1}"#, "handshake_timeout_ms", "must be at least 1, got -1"),
            (#"{"sealing": "sometimes"}"#, "sealing", #"expected relayed_only or always, got "sometimes""#),
            (#"{"max_message_size": 0}"#, "max_message_size", "must be between 1 and 4194240000, got 0"),
            (#"{"default_ttl": 256}"#, "default_ttl", "must be between 1 and 255, got 256"),
            (#"{"reassembly": {"timeout_ms": 0}}"#, "reassembly.timeout_ms", "must be at least 1, got 0"),
            (#"{"window_per_link": 0}"#, "window_per_link", "must be at least 1, got 0"),
            (#"{"escalation": {"max_attempts": null}}"#, "escalation.max_attempts", "null"),
            (#"{"relay": {"enabled": "perhaps"}}"#, "relay.enabled", "type mismatch"),
        ])
    func invalidValuesNameTheirKey(json: String, path: String, description: String) {
        let failure = failure(json)
        #expect(failure?.path == path)
        #expect(failure?.description.contains(description) == true, "\(failure?.description ?? "")")
    }

    @Test func sealingPolicyCodesAsItsRawValue() throws {
        #expect(try decode(SealingPolicy.self, #""relayed_only""#) == .relayedOnly)
        #expect(try decode(SealingPolicy.self, #""always""#) == .always)
        #expect(
            String(decoding: try JSONEncoder().encode(SealingPolicy.relayedOnly), as: UTF8.self) == #""relayed_only""#
        )
    }
}
