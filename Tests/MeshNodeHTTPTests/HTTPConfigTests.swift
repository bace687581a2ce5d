import MeshCore
import MeshNode
import Testing

@Suite("http config keys")
struct HTTPConfigTests {
    @Test("http.enabled and http.listen: defaults, the shipped file, and errors that name the dotted key")
    func keys() throws {
        let defaults = NodeConfiguration(defaultsFor: .builtIn)
        #expect(defaults.http.enabled == false && defaults.http.listen == "127.0.0.1:7480" && defaults.http.isLoopback)
        let shipped = try NodeConfiguration.load(file: nil, environment: [:], overrides: [])
        #expect(shipped.http.enabled && shipped.http.listen == "127.0.0.1:7480")
        let v6 = try NodeConfiguration.load(
            yaml: "http: {enabled: true, listen: \"[::1]:0\"}",
            source: "t",
            environment: [:],
            overrides: []
        )
        #expect(v6.http.hostAndPort.host == "::1" && v6.http.hostAndPort.port == 0 && v6.http.isLoopback)
        let wide = try NodeConfiguration.load(
            yaml: "http: {listen: \"0.0.0.0:8080\"}",
            source: "t",
            environment: [:],
            overrides: []
        )
        #expect(!wide.http.isLoopback)
        for (yaml, fragment) in [
            ("http: {listen: \"127.0.0.1\"}", "expected host:port"),
            ("http: {listen: \"127.0.0.1:70000\"}", "port must be 0 to 65535"),
            ("http: {enabled: maybe}", "http.enabled"), ("http: {listne: \"x\"}", "http.listne"),
        ] {
            #expect {
                _ = try NodeConfiguration.load(yaml: yaml, source: "t", environment: [:], overrides: [])
            } throws: { error in
                let message = (error as? MeshError)?.message ?? ""
                return message.contains(fragment) && message.contains("http.")
            }
        }
        let fromSet = #expect(throws: MeshError.self) {
            _ = try NodeConfiguration.load(yaml: "{}", source: "t", environment: [:], overrides: ["http.listen=nope"])
        }
        #expect(fromSet?.message.contains("http.listen") == true, "\(fromSet?.message ?? "")")
    }
}
