extension NodeConfiguration {
    /// `notify:` — telling the user a message arrived: a program run for each received
    /// message (``Notifier``) and desktop notifications.
    public struct NotifySettings: Sendable, Codable, Hashable {
        /// Whether desktop notifications are sent.
        public enum Desktop: String, Sendable, Codable, Hashable, CaseIterable {
            /// Through `notify-send`, when the node has a session bus and the program.
            case auto
            /// Never.
            case never
        }

        /// A shell command run (`/bin/sh -c`) for each received message, with the
        /// message in its environment; empty: none.
        public var command: String = ""
        /// Desktop notifications.
        public var desktop: Desktop = .never
        /// Most commands (and desktop notifications) running at once; a message that
        /// arrives while that many run raises none.
        public var maxRunning: Int = 4
        /// Seconds a command may run before it is killed.
        public var timeoutSeconds: Double = 10

        /// Built-in defaults.
        public init() {}

        enum CodingKeys: String, CodingKey {
            case command, desktop
            case maxRunning = "max_running"
            case timeoutSeconds = "timeout_seconds"
        }

        /// Decodes and checks every key; a bad value names its key.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            command = try container.decode(String.self, forKey: .command)
            let desktopName = try container.decode(String.self, forKey: .desktop)
            guard let desktop = Desktop(rawValue: desktopName) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .desktop,
                    in: container,
                    debugDescription: "must be auto or never, got \"\(desktopName)\""
                )
            }
            self.desktop = desktop
            maxRunning = try container.decode(Int.self, forKey: .maxRunning)
            try require((1...64).contains(maxRunning), .maxRunning, in: container, "must be 1 to 64, got \(maxRunning)")
            timeoutSeconds = try container.decode(Double.self, forKey: .timeoutSeconds)
            try require(
                timeoutSeconds >= 0.1 && timeoutSeconds <= 3600,
                .timeoutSeconds,
                in: container,
                "must be 0.1 to 3600 (seconds), got \(timeoutSeconds)"
            )
        }

        /// Encodes every key.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(command, forKey: .command)
            try container.encode(desktop.rawValue, forKey: .desktop)
            try container.encode(maxRunning, forKey: .maxRunning)
            try container.encode(timeoutSeconds, forKey: .timeoutSeconds)
        }
    }
}
