import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory new-transport <Name>`: scaffolds a
/// transport module (`Sources/Transport<Name>/`), its conformance test
/// (`Tests/Transport<Name>Tests/`), its entries in Package.swift and an example config
/// (`Config/examples/<name>.yaml`).
///
/// It writes nothing unless every check passes first: the name is UpperCamelCase letters
/// and digits, no file it would create exists, no transport of that name exists, and
/// Package.swift has both marker lines. It never overwrites a file.
///
/// Declared in Package.swift as (the shared-settings loop must skip `.plugin` targets):
/// ```swift
/// .plugin(
///     name: "NewTransport",
///     capability: .command(
///         intent: .custom(verb: "new-transport", description: "Scaffold a transport module, its conformance test, its Package.swift entries and an example config."),
///         permissions: [.writeToPackageDirectory(reason: "new-transport adds Sources/Transport<Name>/, Tests/Transport<Name>Tests/, Config/examples/<name>.yaml and their entries in Package.swift.")]
///     )
/// ),
/// // scmesh:new-transport-targets        <- last line inside `targets: [`
/// // scmesh:new-transport-products       <- last line inside `products: [`
/// ```
@main
struct NewTransport: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let root = context.package.directoryURL
        // A Refusal thrown from here is printed by `swift package` as one `error:` line,
        // and the command exits non-zero.
        let name = try TransportName(arguments: arguments)
        let plan = try Scaffold(name: name, packageRoot: root)
        try plan.write()
        print(plan.summary())
    }
}

/// Why the plugin refused; its message is one line saying what to do.
struct Refusal: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
