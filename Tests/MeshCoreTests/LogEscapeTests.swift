import Testing

@testable import MeshCore

/// A peer's strings reach log lines only escaped (``TerminalText``).
@Suite struct LogEscapeTests {
    @Test("a topic frame whose name holds terminal escapes is refused with the name escaped in the reason")
    func malformedTopicNameIsEscaped() throws {
        let hostile = "/\u{1B}]0;owned\u{07}\u{1B}[2J\n2026 info forged line"
        let bytes = Frame.topicControl(TopicControlFrame(topic: hostile, body: .subscribe(distance: 0))).encoded()
        do {
            _ = try Frame.decode(bytes)
            Issue.record("a topic frame with control characters in its name was accepted")
        } catch {
            let reason = error.message
            #expect(
                !reason.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F },
                "raw control characters: \(reason.debugDescription)"
            )
            #expect(reason.contains("\\u{1B}"), "\(reason)")
        }
    }

    @Test("the helper escapes C0, C1, DEL and bidi controls, keeps tabs and other text")
    func helper() {
        #expect(TerminalText.escaped("a\u{1B}[31mb\u{202E}c\td\u{85}é") == "a\\u{1B}[31mb\\u{202E}c\td\\u{85}é")
        #expect(TerminalText.escaped("one\ntwo", newlines: "\\n") == "one\\ntwo")
    }
}
