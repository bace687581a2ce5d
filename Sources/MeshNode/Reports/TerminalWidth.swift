import Foundation

/// The width `scmesh` fits its tables to: `COLUMNS` when it holds a number, else the
/// terminal's width when standard output is one, else ``fallback`` (a pipe or a file).
public enum TerminalWidth {
    /// The width when standard output is no terminal and `COLUMNS` is not set.
    public static let fallback = 100

    /// The narrowest width honoured: a table is not squeezed below it.
    static let minimum = 40

    /// The width for this process's standard output now.
    public static func current(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int {
        if let text = environment["COLUMNS"], let columns = Int(text.trimmingCharacters(in: .whitespaces)),
            columns > 0
        {
            return max(minimum, columns)
        }
        guard isatty(STDOUT_FILENO) == 1 else { return fallback }
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return fallback }
        return max(minimum, Int(size.ws_col))
    }
}
