import Foundation
import MeshCore
import MeshNode
import MeshStore
import Testing

@Suite("store.history_days")
struct HistoryConfigTests {
    @Test("history_days defaults to 90 and sets the store's history retention")
    func retention() throws {
        let defaults = try NodeConfiguration.load(yaml: "", source: "test", environment: [:], registry: .builtIn)
        #expect(defaults.store.historyDays == 90)
        #expect(defaults.store.storeConfiguration.historyRetention == .seconds(90 * 86_400))
        let set = try NodeConfiguration.load(
            yaml: "store: {history_days: 30}",
            source: "test",
            environment: [:],
            registry: .builtIn
        )
        #expect(set.store.storeConfiguration.historyRetention == .seconds(30 * 86_400))
        #expect(try set.yaml().contains("history_days: 30"))
    }

    @Test(
        "a bad history_days names its key in one line",
        arguments: [
            (
                "store: {history_days: 0}",
                "store.history_days: must be the number of days the history keeps a message, at least 1, got 0"
            ),
            ("store: {history_days: soon}", "store.history_days: expected an integer"),
        ]
    )
    func refused(yaml: String, expected: String) throws {
        #expect {
            _ = try NodeConfiguration.load(yaml: yaml, source: "test.yaml", environment: [:], registry: .builtIn)
        } throws: { error in
            "\(error)".contains(expected) && !"\(error)".contains("\n")
        }
    }
}
