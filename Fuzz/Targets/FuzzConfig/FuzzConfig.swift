import FuzzSupport
import MeshCore
import MeshNode

/// The config loader: any text loads or throws a MeshError `.invalidConfiguration`
/// with a one-line message; what loads prints as YAML that loads to the same YAML.
@main
enum FuzzConfig {
    static func main() { fuzzMain(testOneInput) }
}

func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: fuzzInput(data, size), as: UTF8.self)
    do {
        let configuration = try NodeConfiguration.load(yaml: text, source: "fuzz")
        let yaml = try configuration.yaml()
        let again = try NodeConfiguration.load(yaml: yaml, source: "fuzz (printed)")
        fuzzCheck(try again.yaml() == yaml, "printed config does not load to itself")
    } catch let error as MeshError {
        fuzzCheck(error.code == .invalidConfiguration, "unexpected error code \(error.code)")
        fuzzCheck(!error.message.contains("\n"), "a multi-line error: \(error.message)")
    } catch {
        fuzzCheck(false, "not a MeshError: \(error)")
    }
    return 0
}
