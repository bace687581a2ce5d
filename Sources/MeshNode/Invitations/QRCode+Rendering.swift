import Foundation

extension QRCode {
    /// The symbol as text for a terminal: Unicode half blocks, two module rows per
    /// line (`▀` top dark, `▄` bottom dark, `█` both, space neither), with a light
    /// quiet zone of `quietZone` modules around it.
    ///
    /// With `colors`, every line is drawn in black on a white background (ANSI SGR
    /// `30;47`, reset at the line's end), so the code scans on light and dark terminals
    /// alike. Without, the characters are the dark modules ("ink"): right on a light
    /// background, inverted on a dark one.
    public func terminalText(quietZone: Int = 2, colors: Bool = true) -> String {
        let margin = max(0, quietZone)
        let span = -margin..<(size + margin)
        var lines: [String] = []
        var y = -margin
        while y < size + margin {
            var line = colors ? "\u{1B}[30;47m" : ""
            for x in span {
                switch (self[x, y], y + 1 < size + margin && self[x, y + 1]) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            if colors { line += "\u{1B}[0m" }
            lines.append(line)
            y += 2
        }
        return lines.joined(separator: "\n")
    }

    /// The symbol as a binary PGM image (`P5`, 8-bit grey: dark 0, light 255), each
    /// module `scale` pixels square, with a quiet zone of `quietZone` modules.
    public func pgm(scale: Int = 4, quietZone: Int = 4) -> [UInt8] {
        let scale = max(1, scale)
        let margin = max(0, quietZone)
        let pixels = (size + 2 * margin) * scale
        var image = Array("P5\n\(pixels) \(pixels)\n255\n".utf8)
        image.reserveCapacity(image.count + pixels * pixels)
        for row in 0..<pixels {
            let y = row / scale - margin
            for column in 0..<pixels {
                image.append(self[column / scale - margin, y] ? 0 : 255)
            }
        }
        return image
    }

    /// The symbol as an SVG document (for a web page, e.g. the dashboard): a white
    /// square with a quiet zone of `quietZone` modules, and the dark modules as one
    /// path of unit squares (one horizontal run per `h` segment), so it scales
    /// without blurring. `title` becomes the image's accessible name.
    public func svg(quietZone: Int = 4, title: String = "QR code") -> String {
        let margin = max(0, quietZone)
        let side = size + 2 * margin
        var path = ""
        for y in 0..<size {
            var x = 0
            while x < size {
                guard self[x, y] else {
                    x += 1
                    continue
                }
                var run = 1
                while x + run < size && self[x + run, y] { run += 1 }
                path += "M\(x + margin) \(y + margin)h\(run)v1h-\(run)z"
                x += run
            }
        }
        let escapedTitle = title.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(
            of: "<",
            with: "&lt;"
        )
        .replacingOccurrences(of: ">", with: "&gt;")
        return """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(side) \(side)" shape-rendering="crispEdges" \
            role="img" data-qr-version="\(version)"><title>\(escapedTitle)</title>\
            <rect width="\(side)" height="\(side)" fill="#fff"/><path fill="#000" d="\(path)"/></svg>
            """
    }

    /// Reads back ``terminalText(quietZone:colors:)`` (colours or not): the dark modules
    /// of the drawn square, quiet zone included, as rows of booleans. For tests and
    /// tools that take a code from a terminal transcript.
    public static func modules(fromTerminalText text: String) -> [[Bool]] {
        var rows: [[Bool]] = []
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.replacingOccurrences(of: "\u{1B}[30;47m", with: "").replacingOccurrences(
                of: "\u{1B}[0m",
                with: ""
            )
            var top: [Bool] = []
            var bottom: [Bool] = []
            for character in line {
                top.append(character == "█" || character == "▀")
                bottom.append(character == "█" || character == "▄")
            }
            rows.append(top)
            rows.append(bottom)
        }
        return rows
    }
}
