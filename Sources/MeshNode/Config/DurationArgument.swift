import Foundation
import MeshCore

/// A duration as a user types it on the command line: a number with an optional unit,
/// `s` (the default), `m`, `h` or `d` (`90`, `90s`, `30m`, `24h`, `7d`, `1.5h`).
public enum DurationArgument {
    /// The duration in seconds.
    /// - Throws: `MeshError` `.invalidArgument` naming `option` and the accepted forms.
    public static func seconds(_ text: String, option: String) throws(MeshError) -> Double {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var number = Substring(trimmed)
        var factor = 1.0
        if let last = number.last, let unit = units[last] {
            factor = unit
            number = number.dropLast()
        }
        if let value = Double(number), value.isFinite, value <= 0 {
            throw MeshError(
                .invalidArgument,
                "\(option) must be longer than 0 (a duration such as 90s, 30m, 24h or 7d), got \"\(text.prefix(40))\""
            )
        }
        guard let value = Double(number), value.isFinite, value > 0 else {
            throw MeshError(
                .invalidArgument,
                "\(option) takes a duration such as 90s, 30m, 24h or 7d, got \"\(text.prefix(40))\""
            )
        }
        return value * factor
    }
}
