import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

/// `scmesh dashboard` hands the login link to the browser opener without putting it in
/// the opener's arguments, which every user on the machine can read in /proc.
@Suite("dashboard opener")
struct DashboardOpenerProcessTests {
    @Test(
        "the opener ($BROWSER) gets a private file's URL, not the login token; the file (mode 0600) leads to the login link"
    )
    func loginTokenNotInArguments() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let directory = nodes.directory
        let node = try await nodes.startAlone("n")
        let (data, client) = (node.dataDirectory, node.client)
        try await eventually("the node serves HTTP", attempts: 1500) {
            (try? await client.call(.status).decode(StatusReply.self).httpAddress) != nil
        }
        // A stand-in browser that records its arguments and what the file it was given holds.
        let recorded = directory.file("opener-arguments")
        let opener = directory.file("opener")
        try """
        #!/bin/sh
        printf '%s\\n' "$@" > '\(recorded)'
        """.write(toFile: opener, atomically: true, encoding: .utf8)
        chmod(opener, 0o700)
        var environment = scmeshEnvironment(home: directory.path)
        environment["BROWSER"] = opener
        let result = try await runScmesh(["dashboard", "--data-dir", data], environment: environment)
        #expect(result.status == 0, "\(result.standardError)")
        let arguments = try String(contentsOfFile: recorded, encoding: .utf8)
        #expect(!arguments.contains("login="), "the login token is in the opener's arguments: \(arguments)")
        #expect(!result.standardOutput.contains("login="), "\(result.standardOutput)")
        let page = try #require(URL(string: arguments.trimmingCharacters(in: .whitespacesAndNewlines))?.path)
        var info = stat()
        #expect(
            stat(page, &info) == 0 && info.st_mode & 0o777 == 0o600,
            "mode \(String(info.st_mode & 0o777, radix: 8))"
        )
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("/#login="), "\(html)")

        // An opener that fails (no display): no "opened", the link on stdout instead.
        let failing = directory.file("failing-opener")
        try "#!/bin/sh\nexit 3\n".write(toFile: failing, atomically: true, encoding: .utf8)
        chmod(failing, 0o700)
        environment["BROWSER"] = failing
        let failed = try await runScmesh(["dashboard", "--data-dir", data], environment: environment)
        #expect(failed.status == 0, "\(failed.standardError)")
        #expect(!failed.standardOutput.contains("opened"), "\(failed.standardOutput)")
        #expect(failed.standardOutput.contains("/#login="), "\(failed.standardOutput)")
        #expect(failed.standardError.contains("could not open the dashboard (exit 3)"), "\(failed.standardError)")
    }
}
