import Foundation
import MeshCore
import MeshNode
import MeshNodeHTTP
import MeshTesting
import NIOHTTP1
import Testing

@Suite("HTTP API: run-time control")
struct HTTPControlTests {
    @Test(
        "transports disabled and enabled, settings reset, known peers, dial refusals, contacts renamed and noted, network quality and power profile in status and /metrics"
    )
    func runTimeControl() async throws {
        let a = try await HTTPNode.start(network: uniqueNetwork())
        defer { Task { try await a.stop() } }

        #expect(try await a.call(.GET, "/api/v1/status").object["network_quality"] as? String == "offline")
        let metrics = try await a.call(.GET, "/metrics")
        #expect(metrics.text.contains("scmesh_network_quality 0"), "\(metrics.text.prefix(400))")
        #expect(metrics.text.contains(#"scmesh_network_quality_info{quality="offline"} 1"#))
        // One series per power profile, exactly one of them 1 (whatever this machine's power is).
        let profileLines = metrics.text.split(separator: "\n").filter { $0.hasPrefix("scmesh_power_profile_info{") }
        #expect(profileLines.count == PowerProfile.allCases.count, "\(profileLines)")
        let inEffect = profileLines.filter { $0.split(separator: " ").last.flatMap { Double($0) } == 1 }
        #expect(inEffect.count == 1, "\(profileLines)")

        // A transport off and on again; the name is checked.
        let off = try await a.call(.PUT, "/api/v1/transports/loopback/disabled")
        #expect(off.status == 200, "\(off.text)")
        #expect(off.object["disabled"] as? [String] == ["loopback"])
        let listed = try await a.call(.GET, "/api/v1/transports").object
        let loopback = (listed["transports"] as? [[String: Any]])?.first { $0["name"] as? String == "loopback" }
        #expect(loopback?["state"] as? String == "disabled", "\(listed)")
        #expect(listed["disabled"] as? [String] == ["loopback"])
        let unknown = try await a.call(.PUT, "/api/v1/transports/nosuch/disabled")
        #expect(unknown.status == 400 && unknown.errorCode == "invalidArgument")
        #expect(unknown.text.contains(#"no transport named \"nosuch\""#) && unknown.text.contains("loopback"))
        let on = try await a.call(.DELETE, "/api/v1/transports/loopback/disabled")
        #expect(on.status == 200 && on.object["disabled"] as? [String] == [], "\(on.text)")
        try await eventually("loopback runs again") {
            let transports = try await a.control.call(.transports(.list)).decode(TransportsReply.self)
            return transports.transports.first { $0.name == "loopback" }?.state == .running
        }

        // Settings: a run-time change is named as one; DELETE goes back to the config's.
        let changed = try await a.call(.PATCH, "/api/v1/settings", json: #"{"relay_max_per_hour":5}"#)
        #expect(changed.object["runtime"] as? [String] == ["relay_max_per_hour"], "\(changed.text)")
        let configured = (changed.object["config"] as? [String: Any])?["relay_max_per_hour"] as? Int
        let reset = try await a.call(.DELETE, "/api/v1/settings")
        #expect(reset.status == 200 && reset.object["runtime"] as? [String] == [], "\(reset.text)")
        #expect(reset.object["relay_max_per_hour"] as? Int == configured)

        // The ledger, and dial refusals in one line.
        #expect(try await a.call(.GET, "/api/v1/peers/known").object["known"] as? [Any] != nil)
        let noTransport = try await a.call(.POST, "/api/v1/dial", json: #"{"transport":"nosuch","address":"x"}"#)
        #expect(noTransport.status == 400 && noTransport.text.contains("loopback"), "\(noTransport.text)")
        let noAddress = try await a.call(.POST, "/api/v1/dial", json: #"{"transport":"loopback","address":" "}"#)
        #expect(noAddress.status == 400 && noAddress.text.contains("address"), "\(noAddress.text)")

        // Contacts: renamed, noted, never seen.
        let bob = String(repeating: "ab", count: 32)
        #expect(try await a.call(.POST, "/api/v1/contacts", json: #"{"alias":"bob","peer":"\#(bob)"}"#).status == 200)
        let renamed = try await a.call(.PUT, "/api/v1/contacts/bob/alias", json: #"{"alias":"robert"}"#)
        #expect(renamed.status == 200 && renamed.text.contains("renamed bob to robert"), "\(renamed.text)")
        let noted = try await a.call(.PUT, "/api/v1/contacts/robert/note", json: #"{"note":"from the meetup"}"#)
        let entry = (noted.object["contacts"] as? [[String: Any]])?.first
        #expect(entry?["alias"] as? String == "robert" && entry?["note"] as? String == "from the meetup")
        #expect(entry?["last_seen_at"] == nil)
        let missing = try await a.call(.PUT, "/api/v1/contacts/bob/alias", json: #"{"alias":"x"}"#)
        #expect(missing.status == 400 && missing.errorCode == "invalidArgument", "\(missing.text)")
    }
}
