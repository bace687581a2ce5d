/// The name given on the command line, checked, with the spellings the templates use.
struct TransportName {
    /// As given: `LoRa`.
    let type: String
    /// The config key and transport name: `lora`.
    let key: String
    /// The module: `TransportLoRa`.
    var module: String { "Transport\(type)" }
    /// The test module: `TransportLoRaTests`.
    var testModule: String { "Transport\(type)Tests" }

    /// Names the generated code cannot use as a type prefix.
    static let reserved: Set<String> = ["Any", "Self", "Type", "Protocol"]

    /// Reads `<Name>` from the plugin's arguments.
    /// - Throws: ``Refusal`` when there is not exactly one argument or it is not an
    ///   UpperCamelCase Swift identifier of ASCII letters and digits.
    init(arguments: [String]) throws {
        let usage =
            "usage: swift package --allow-writing-to-package-directory new-transport <Name> (UpperCamelCase, e.g. LoRa)"
        let words = arguments.filter { !$0.hasPrefix("--") }
        guard words.count == 1, let name = words.first, arguments.count == 1 else {
            throw Refusal(
                arguments.isEmpty
                    ? usage
                    : "expected exactly one transport name, got \(arguments.map { "'\($0)'" }.joined(separator: " ")); \(usage)"
            )
        }
        let isASCIILetter: (Character) -> Bool = { $0.isASCII && $0.isLetter }
        let isASCIIDigit: (Character) -> Bool = { $0.isASCII && $0.isNumber }
        guard let first = name.first, isASCIILetter(first), first.isUppercase,
            name.allSatisfy({ isASCIILetter($0) || isASCIIDigit($0) })
        else {
            throw Refusal(
                "'\(name)' is not a valid transport name: use UpperCamelCase ASCII letters and digits starting with a capital letter (e.g. LoRa, WiFiDirect, Serial2)"
            )
        }
        guard !Self.reserved.contains(name) else {
            throw Refusal("'\(name)' is reserved in Swift; pick another transport name")
        }
        type = name
        key = name.lowercased()
    }
}
