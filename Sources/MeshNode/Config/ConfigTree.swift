import Foundation
import Yams

/// Operations on YAML node trees used to layer and check configs.
/// Yams's node (MeshNode has its own `Node`).
typealias YAMLNode = Yams.Node

enum ConfigTree {
    /// A set could not descend because `prefix` holds a single value.
    struct PathError: Error {
        var prefix: [String]
    }

    /// Encodes a value into a node tree.
    static func encode(_ value: some Encodable) throws -> YAMLNode {
        let node = try Yams.compose(yaml: YAMLEncoder().encode(value)) ?? YAMLNode([(YAMLNode, YAMLNode)]())
        return plainNumbers(node)
    }

    /// Yams writes doubles as `2e-1`; people write `0.2`.
    static func plainNumbers(_ node: YAMLNode) -> YAMLNode {
        switch node {
        case .mapping(let mapping):
            return YAMLNode(mapping.map { ($0.key, plainNumbers($0.value)) })
        case .sequence(let sequence):
            return YAMLNode(sequence.map(plainNumbers))
        case .scalar(let scalar):
            guard scalar.style == .plain || scalar.style == .any,
                scalar.string.contains(where: { $0 == "e" || $0 == "E" }),
                let value = Double(scalar.string), value.isFinite
            else { return node }
            return YAMLNode("\(value)")
        case .alias:
            return node
        }
    }

    /// `base` with `overlay` laid over it: mappings merge key by key, anything else is replaced.
    static func merge(_ base: YAMLNode, _ overlay: YAMLNode) -> YAMLNode {
        guard case .mapping(let baseMapping) = base, case .mapping(let overlayMapping) = overlay else { return overlay }
        var pairs = baseMapping.map { ($0.key, $0.value) }
        for (key, value) in overlayMapping {
            if let index = pairs.firstIndex(where: { keyName($0.0) == keyName(key) }) {
                pairs[index].1 = merge(pairs[index].1, value)
            } else {
                pairs.append((key, value))
            }
        }
        return YAMLNode(pairs)
    }

    /// The node at a path of mapping keys.
    static func value(at path: [String], in node: YAMLNode) -> YAMLNode? {
        var current = node
        for component in path {
            guard case .mapping(let mapping) = current,
                let next = mapping.first(where: { keyName($0.key) == component })?.value
            else { return nil }
            current = next
        }
        return current
    }

    /// `node` with `value` at `path`, creating mappings on the way.
    /// - Throws: ``PathError`` when a prefix of the path holds a single value or list.
    static func setting(
        _ value: YAMLNode,
        at path: [String],
        in node: YAMLNode,
        walked: [String] = []
    ) throws -> YAMLNode {
        guard let head = path.first else { return value }
        var pairs: [(YAMLNode, YAMLNode)]
        switch node {
        case .mapping(let mapping): pairs = mapping.map { ($0.key, $0.value) }
        case .scalar where node.null != nil: pairs = []
        default: throw PathError(prefix: walked)
        }
        let rest = Array(path.dropFirst())
        if let index = pairs.firstIndex(where: { keyName($0.0) == head }) {
            pairs[index].1 = try setting(value, at: rest, in: pairs[index].1, walked: walked + [head])
        } else {
            pairs.append(
                (
                    YAMLNode(head),
                    try setting(value, at: rest, in: YAMLNode([(YAMLNode, YAMLNode)]()), walked: walked + [head])
                )
            )
        }
        return YAMLNode(pairs)
    }

    /// Paths of every leaf: scalars, lists and empty mappings.
    static func leafPaths(_ node: YAMLNode, prefix: [String] = []) -> [[String]] {
        guard case .mapping(let mapping) = node, !mapping.isEmpty else { return prefix.isEmpty ? [] : [prefix] }
        return mapping.flatMap { leafPaths($0.value, prefix: prefix + [keyName($0.key)]) }
    }

    /// Every key path of a mapping tree with where its key was written.
    static func keyMarks(_ node: YAMLNode, prefix: [String] = []) -> [([String], Mark?)] {
        guard case .mapping(let mapping) = node else { return [] }
        return mapping.flatMap { pair -> [([String], Mark?)] in
            let path = prefix + [keyName(pair.key)]
            return [(path, pair.key.mark)] + keyMarks(pair.value, prefix: path)
        }
    }

    /// The first key path in `node` that `known` does not have (lists are not entered).
    static func firstUnknownKey(in node: YAMLNode, known: YAMLNode, prefix: [String] = []) -> [String]? {
        guard case .mapping(let mapping) = node else { return nil }
        guard case .mapping(let knownMapping) = known else { return nil }  // a type error, reported by decoding
        for (key, value) in mapping {
            let name = keyName(key)
            guard let knownValue = knownMapping.first(where: { keyName($0.key) == name })?.value else {
                return prefix + [name]
            }
            if let unknown = firstUnknownKey(in: value, known: knownValue, prefix: prefix + [name]) { return unknown }
        }
        return nil
    }

    /// `a.b.c`, with list indexes as `[n]`.
    static func dotted(_ path: [String]) -> String {
        var result = ""
        for component in path {
            if component.hasPrefix("[") {
                result += component
            } else {
                result += result.isEmpty ? component : "." + component
            }
        }
        return result
    }

    /// Path components of a coding path (indexes become `[n]`).
    static func pathComponents(_ codingPath: [any CodingKey]) -> [String] {
        codingPath.map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue }
    }

    /// `SCMESH_` plus the path in upper case with `_` between and inside components.
    static func environmentName(_ path: [String]) -> String {
        let body = path.joined(separator: "_").uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
        return "SCMESH_" + String(body)
    }

    /// What a value looks like, for "got ..." in messages.
    static func describe(_ node: YAMLNode?) -> String {
        switch node {
        case nil: return "nothing"
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        case .scalar(let scalar):
            if node?.null != nil { return "null" }
            return "\"\(scalar.string)\""
        }
    }

    /// What a decoded type expects, in words.
    static func expectation(_ type: Any.Type) -> String {
        switch type {
        case is Bool.Type: return "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type, is UInt32.Type, is UInt16.Type,
            is UInt8.Type:
            return "an integer"
        case is Double.Type, is Float.Type: return "a number"
        case is String.Type: return "a string"
        case is YAMLNode.Mapping.Type: return "a mapping"
        case is YAMLNode.Sequence.Type: return "a list"
        case is YAMLNode.Scalar.Type: return "a single value"
        default:
            let name = String(describing: type)
            if name.hasPrefix("Array<") { return "a list" }
            if name.hasPrefix("Dictionary<") { return "a mapping" }
            return "a value of type \(name)"
        }
    }

    /// The first line of an error's description.
    static func oneLine(_ error: any Error) -> String {
        String(describing: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
    }

    static func keyName(_ key: YAMLNode) -> String {
        key.string ?? "\(key)"
    }
}
