/// Text from elsewhere (a peer, the network, a file) made safe to print on a
/// terminal or write into a log line: the one helper the node's outputs share.
public enum TerminalText {
    /// `text` with every character that a terminal would act on made visible: C0
    /// controls but tab (and newlines when `newlines` is given, which replaces each),
    /// DEL, C1 controls and the bidirectional marks and overrides become
    /// `\u{1B}`-style escapes, so remote data cannot clear the screen, retitle the
    /// window, forge a log line or reorder what is shown. Linear in the text's length.
    ///
    /// ```swift
    /// TerminalText.escaped("\u{1B}[2J hi")  // "\\u{1B}[2J hi"
    /// ```
    public static func escaped(_ text: some StringProtocol, newlines: String? = nil) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "\n" || needsEscape($0) }) else { return String(text) }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar == "\n", let newlines {
                result.append(contentsOf: newlines.unicodeScalars)
            } else if scalar == "\n" || needsEscape(scalar) {
                result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    /// C0 controls but tab, DEL, C1 controls, and the bidirectional marks and overrides.
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09: false
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
