import Foundation

/// Everything `new-transport` creates or edits for one name, checked before anything
/// is written.
struct Scaffold {
    /// The marker inside `products: [` above which the product entry goes.
    static let productsMarker = "// scmesh:new-transport-products"
    /// The marker inside `targets: [` above which the target entries go.
    static let targetsMarker = "// scmesh:new-transport-targets"

    let name: TransportName
    let root: URL
    /// New files, relative to the package root, with their contents.
    let files: [(path: String, contents: String)]
    /// Package.swift with the new entries.
    let manifest: String

    /// Plans the scaffold and checks it can be written without touching anything that exists.
    /// - Throws: ``Refusal`` naming the first obstacle.
    init(name: TransportName, packageRoot root: URL) throws {
        self.name = name
        self.root = root
        let templates = Templates(name: name)
        files = [
            ("Sources/\(name.module)/\(name.type)Transport.swift", templates.transport),
            ("Sources/\(name.module)/\(name.type)Link.swift", templates.link),
            ("Sources/\(name.module)/\(name.type)Transport+Configuration.swift", templates.configuration),
            ("Tests/\(name.testModule)/\(name.type)ConformanceTests.swift", templates.conformanceTests),
            ("Config/examples/\(name.key).yaml", templates.exampleConfig),
        ]
        let manifestURL = root.appendingPathComponent("Package.swift")
        guard let manifestText = try? String(contentsOf: manifestURL, encoding: .utf8) else {
            throw Refusal("cannot read \(manifestURL.path); run the plugin from the SCMesh package root")
        }
        try Self.refuseExisting(name, root: root, manifest: manifestText, files: files.map(\.path))
        manifest = try Self.insertEntries(for: name, into: manifestText, templates: templates)
    }

    /// Refuses when a module, test module, config key or any file of the scaffold exists.
    static func refuseExisting(_ name: TransportName, root: URL, manifest: String, files: [String]) throws {
        let fileManager = FileManager.default
        for directory in ["Sources", "Tests"] {
            let existing =
                (try? fileManager.contentsOfDirectory(atPath: root.appendingPathComponent(directory).path)) ?? []
            for entry in existing
            where entry.lowercased() == name.module.lowercased() || entry.lowercased() == name.testModule.lowercased() {
                throw Refusal(
                    "transport \(name.type) exists: \(directory)/\(entry) is already there; pick another name"
                )
            }
        }
        if manifest.contains("\"\(name.module)\"") {
            throw Refusal(
                "transport \(name.type) exists: Package.swift already names \"\(name.module)\"; pick another name"
            )
        }
        let defaultConfig =
            (try? String(contentsOf: root.appendingPathComponent("Config/node.yaml"), encoding: .utf8)) ?? ""
        if defaultConfig.split(separator: "\n").contains(where: { $0 == "  \(name.key):" }) {
            throw Refusal("a transport named '\(name.key)' exists in Config/node.yaml; pick another name")
        }
        for path in files where fileManager.fileExists(atPath: root.appendingPathComponent(path).path) {
            throw Refusal("\(path) exists and new-transport never overwrites a file; remove it or pick another name")
        }
    }

    /// Package.swift with the product entry above the products marker and the target
    /// entries above the targets marker, each indented like its marker.
    static func insertEntries(for name: TransportName, into manifest: String, templates: Templates) throws -> String {
        var lines = manifest.components(separatedBy: "\n")
        for (marker, entry) in [(productsMarker, templates.productEntry), (targetsMarker, templates.targetEntries)] {
            let matches = lines.indices.filter { lines[$0].trimmingCharacters(in: .whitespaces) == marker }
            guard matches.count == 1, let index = matches.first else {
                throw Refusal(
                    matches.isEmpty
                        ? "Package.swift has no '\(marker)' line; add it as the last line inside \(marker == productsMarker ? "products: [" : "targets: [") and run again"
                        : "Package.swift has \(matches.count) '\(marker)' lines; keep exactly one"
                )
            }
            let indent = String(lines[index].prefix { $0 == " " || $0 == "\t" })
            let block = entry.split(separator: "\n", omittingEmptySubsequences: false).map {
                $0.isEmpty ? "" : indent + $0
            }
            lines.insert(contentsOf: block, at: index)
        }
        return lines.joined(separator: "\n")
    }

    /// Writes the new files (never replacing one) and then Package.swift.
    func write() throws {
        let fileManager = FileManager.default
        for (path, contents) in files {
            let url = root.appendingPathComponent(path)
            do {
                try fileManager.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(contents.utf8).write(to: url, options: .withoutOverwriting)
            } catch {
                throw Refusal("could not create \(path): \(error.localizedDescription)")
            }
        }
        do {
            try Data(manifest.utf8).write(to: root.appendingPathComponent("Package.swift"), options: .atomic)
        } catch {
            throw Refusal("could not update Package.swift: \(error.localizedDescription)")
        }
    }

    /// What was done and what to do next.
    func summary() -> String {
        """
        Created transport \(name.type):
        \(files.map { "  \($0.path)" }.joined(separator: "\n"))
          Package.swift: product and targets \(name.module), \(name.testModule)
        Next:
          1. swift build --target \(name.module)
          2. Fill in the TODOs in Sources/\(name.module)/ until `swift test --filter \(name.testModule)`
             passes (it fails until the I/O is written).
          3. Register the factory in the node: docs/ADDING_A_TRANSPORT.md, "Register the factory"
             (Config/examples/\(name.key).yaml loads once it is registered).
        """
    }
}
