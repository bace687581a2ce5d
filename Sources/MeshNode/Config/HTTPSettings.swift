import MeshCore

extension NodeConfiguration {
    /// `http:` — the node's local HTTP API, event stream, dashboard and metrics
    /// (served by the `MeshNodeHTTP` module).
    public struct HTTPSettings: Sendable, Codable, Hashable {
        /// Whether the node serves HTTP. Built-in default off; `Config/node.yaml` turns it on.
        public var enabled: Bool = false
        /// `host:port` to listen on (`127.0.0.1:7480` by default; port 0 picks a free
        /// port). A host other than loopback is served as configured, with a warning.
        public var listen: String = "127.0.0.1:7480"

        /// Built-in defaults (off, loopback).
        public init() {}

        enum CodingKeys: String, CodingKey {
            case enabled, listen
        }

        /// Decodes and checks every key; a bad value names its key.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            enabled = try container.decode(Bool.self, forKey: .enabled)
            listen = try container.decode(String.self, forKey: .listen)
            if case .failure(let problem) = Self.parse(listen) {
                throw DecodingError.dataCorruptedError(forKey: .listen, in: container, debugDescription: problem)
            }
        }

        /// Encodes every key.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(enabled, forKey: .enabled)
            try container.encode(listen, forKey: .listen)
        }

        /// The host and port of ``listen``.
        public var hostAndPort: (host: String, port: Int) {
            switch Self.parse(listen) {
            case .success(let parsed): parsed
            case .failure: ("127.0.0.1", 7480)
            }
        }

        /// Whether ``listen`` names a loopback host (`127.x.x.x`, `::1`, `localhost`).
        public var isLoopback: Bool {
            let host = hostAndPort.host
            return host == "localhost" || host == "::1" || host.hasPrefix("127.")
        }

        /// A parsed `host:port` (an IPv6 host in brackets), or what is wrong with it.
        enum Parsed {
            case success((host: String, port: Int))
            case failure(String)
        }

        static func parse(_ text: String) -> Parsed {
            let example = "expected host:port such as \"127.0.0.1:7480\" or \"[::1]:7480\", got \"\(text.prefix(80))\""
            var host: Substring
            let portText: Substring
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]"), text[close...].hasPrefix("]:") else {
                    return .failure(example)
                }
                host = text[text.index(after: text.startIndex)..<close]
                portText = text[text.index(close, offsetBy: 2)...]
            } else {
                guard let colon = text.lastIndex(of: ":") else { return .failure(example) }
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
                if host.contains(":") { return .failure(example) }
            }
            guard let port = Int(portText), (0...65_535).contains(port) else {
                return .failure("port must be 0 to 65535; \(example)")
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" })
            else {
                return .failure(example)
            }
            host = host.lowercased()[...]
            return .success((String(host), port))
        }
    }
}
