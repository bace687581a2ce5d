import Hummingbird

/// A request's query parameters, checked against the names a route knows: an
/// unknown one (a typo such as `limt`) or a value of the wrong type is a 400 that
/// names it.
struct QueryParameters {
    private let values: [String: String]

    /// - Throws: ``APIError`` (400) for a parameter not in `known`.
    init(_ request: Request, known: [String]) throws {
        var values: [String: String] = [:]
        for (key, value) in request.uri.queryParameters {
            let name = String(key)
            guard known.contains(name) else {
                let list = known.isEmpty ? "this route takes none" : "known: \(known.joined(separator: ", "))"
                throw APIError.badRequest("unknown query parameter \"\(name.prefix(80))\" (\(list))")
            }
            values[name] = String(value)
        }
        self.values = values
    }

    /// The parameter as text.
    func string(_ name: String) -> String? { values[name] }

    /// The parameter as an integer.
    func int(_ name: String) throws -> Int? {
        guard let text = values[name] else { return nil }
        guard let value = Int(text) else {
            throw APIError.badRequest("query parameter \"\(name)\" must be an integer, got \"\(text.prefix(80))\"")
        }
        return value
    }

    /// The parameter as a number.
    func double(_ name: String) throws -> Double? {
        guard let text = values[name] else { return nil }
        guard let value = Double(text), value.isFinite else {
            throw APIError.badRequest("query parameter \"\(name)\" must be a number, got \"\(text.prefix(80))\"")
        }
        return value
    }

    /// The parameter as a boolean (`true`/`false`/`1`/`0`).
    func bool(_ name: String) throws -> Bool? {
        guard let text = values[name] else { return nil }
        switch text.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default:
            throw APIError.badRequest("query parameter \"\(name)\" must be true or false, got \"\(text.prefix(80))\"")
        }
    }
}
