import Foundation

/// A table as `scmesh` prints it: a header row, then one row per item, columns two
/// spaces apart, fitted to a width. When the rows are wider, the widest free-text
/// column (a note, a reason, a message's text) gives up characters first, its cells
/// cut with an ellipsis, so a row never wraps; the other columns (IDs, times,
/// numbers) stay whole.
///
/// ```swift
/// TextTable.render([["ID", "NOTE"], ["1", "a long note"]], freeText: [1], width: 10)
/// // "ID  NOTE\n1   a long…"
/// ```
public enum TextTable {
    /// The fewest characters a free-text column is cut to (or its header's, if longer).
    static let minimumFreeWidth = 8

    /// `rows` (the first is the header) as lines no wider than `width` when cutting the
    /// columns `freeText` (indices) can make them so.
    public static func render(_ rows: [[String]], freeText: [Int] = [], width: Int) -> String {
        let columns = rows.map(\.count).max() ?? 0
        var widths = (0..<columns).map { column in
            rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0
        }
        let header = rows.first ?? []
        let floor = { (column: Int) in
            max(minimumFreeWidth, column < header.count ? header[column].count : 0)
        }
        var excess = widths.reduce(0, +) + 2 * max(0, columns - 1) - width
        while excess > 0 {
            let shrinkable = freeText.filter { $0 < columns && widths[$0] > floor($0) }
            guard let widest = shrinkable.max(by: { widths[$0] < widths[$1] }) else { break }
            // Down to the next widest free column first, so the widest gives up the most.
            let next = shrinkable.filter { $0 != widest }.map { widths[$0] }.max() ?? 0
            let target = max(floor(widest), widths[widest] - excess, next)
            let cut = widths[widest] - (target < widths[widest] ? target : widths[widest] - 1)
            widths[widest] -= cut
            excess -= cut
        }
        return rows.map { row in
            row.enumerated().map { column, cell in
                let text = cell.count > widths[column] ? String(cell.prefix(max(0, widths[column] - 1))) + "…" : cell
                return text + String(repeating: " ", count: max(0, widths[column] - text.count))
            }.joined(separator: "  ").replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }.joined(separator: "\n")
    }
}
