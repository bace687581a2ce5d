import Foundation
import MeshCore
import MeshCrypto
import MeshNode
import MeshTesting
import TestSupport
import Testing

// Issue 15's invitation test: `scmesh invite` on one node, `scmesh join` on another,
// then a message delivered between the two real `scmesh run` processes over TCP on
// 127.0.0.1. The inviter listens on port 0, so only the address its transport really
// bound can get the joiner there. Every wait is a bounded poll.

@Suite("invite and join between two node processes")
struct InviteProcessTests {
    @Test(
        "invite (link and QR code) → join → contact added, link up, a message delivered; the QR code decodes to the link"
    )
    func inviteJoinSend() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        let nodeA = try await nodes.startAlone(
            "a",
            ["--set", "node.name=alice"]
        )
        let nodeB = try await nodes.startAlone("b")
        let (a, b, clientA, clientB) = (nodeA.dataDirectory, nodeB.dataDirectory, nodeA.client, nodeB.client)
        let idA = try await clientA.call(.status).decode(StatusReply.self).peerID
        let boundA =
            try await clientA.call(.status).decode(StatusReply.self)
            .transports.first { $0.name == "tcp" }?.addresses ?? []
        #expect(
            boundA.count == 1 && boundA.first?.hasPrefix("127.0.0.1:") == true && boundA.first != "127.0.0.1:0",
            "\(boundA)"
        )

        // 1. The invitation as JSON names the bound address, the name and a 2 h expiry.
        let json = try await runScmesh(["invite", "--data-dir", a, "--json", "--expires", "2h"], home: home)
        #expect(json.status == 0, "\(json.standardError)")
        let reply = try jsonObject(json.standardOutput)
        let link = try #require(reply["link"] as? String)
        #expect(reply["addresses"] as? [String] == boundA.map { "tcp \($0)" })
        #expect(reply["name"] as? String == "alice")
        let invitation = try Invitation(link: link)
        #expect(invitation.peerID == idA)
        let remaining = Double(invitation.expiresAt) - Date().timeIntervalSince1970
        #expect(remaining > 7000 && remaining <= 7200, "expires in \(remaining) s")

        // 2. As text: a QR code that zbar reads as the printed link.
        let text = try await runScmesh(["invite", "--data-dir", a], home: home)
        #expect(text.status == 0, "\(text.standardError)")
        let lines = text.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let printed = try #require(lines.first { $0.hasPrefix("scmesh:") })
        #expect(!text.standardOutput.contains("\u{1B}["), "no colours when stdout is not a terminal")
        let qrLines = lines.prefix { !$0.isEmpty }.joined(separator: "\n")
        let modules = QRCode.modules(fromTerminalText: qrLines)
        let decoded = try await zbarDecode(pgm(modules))
        #expect(String(decoding: decoded, as: UTF8.self) == printed)

        // 3. Join on B: the contact is added under the invitation's name, and B dials A.
        let join = try await runScmesh(["join", "--data-dir", b, printed], home: home)
        #expect(join.status == 0, "\(join.standardError)")
        #expect(join.standardOutput.contains("added contact alice = \(idA.hex)"), "\(join.standardOutput)")
        #expect(join.standardOutput.contains("dialling    tcp \(boundA[0])"), "\(join.standardOutput)")
        let contacts = try await clientB.call(.contacts(.list)).decode(ContactsReply.self)
        #expect(contacts.contacts.map(\.alias) == ["alice"])
        #expect(contacts.contacts.first?.peer == idA)
        try await eventually("B has a link to A", attempts: 1500) {
            try await clientB.call(.peers).decode(PeersReply.self).peers.contains { $0.peer == idA }
        }

        // 4. A message to the alias arrives at A, with the signed receipt.
        let send = try await runScmesh(
            ["send", "--data-dir", b, "--json", "--timeout", "30", "alice", "hello through an invitation"],
            home: home
        )
        #expect(send.status == 0, "\(send.standardError)")
        #expect(try jsonObject(send.standardOutput)["status"] as? String == "delivered")
        #expect(try await inboxTexts(dataDirectory: a, home: home) == ["hello through an invitation"])

        // 5. Joining again changes nothing and says so.
        let again = try await runScmesh(["join", "--data-dir", b, printed], home: home)
        #expect(again.status == 0)
        #expect(again.standardOutput.contains("already a contact: alice"), "\(again.standardOutput)")
    }

    @Test(
        "join refuses, with a clear error and exit 1: its own invitation, an expired one, a tampered one, a malformed one"
    )
    func joinRefusals() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        let (a, b) = (
            try await nodes.startAlone("a").dataDirectory,
            try await nodes.startAlone("b").dataDirectory
        )
        let link = try jsonObject(
            try await runScmesh(["invite", "--data-dir", a, "--json"], home: home).standardOutput
        )["link"]
        let valid = try #require(link as? String)

        // Its own invitation.
        let own = try await runScmesh(["join", "--data-dir", a, valid], home: home)
        #expect(own.status == 1)
        #expect(own.standardError.contains("this node's own invitation"), "\(own.standardError)")

        // Expired: signed by A's own key an hour ago (the node never makes one).
        let identityA = try NodeIdentity.loadOrCreate(directory: a)
        let expired = try Invitation.signed(
            by: identityA,
            name: nil,
            addresses: [],
            expiresAt: UInt32(Date().timeIntervalSince1970 - 3600)
        )
        let late = try await runScmesh(["join", "--data-dir", b, expired.link], home: home)
        #expect(late.status == 1)
        #expect(late.standardError.contains("expired 1 h 0 min ago"), "\(late.standardError)")

        // Tampered: the expiry pushed out by a year without a new signature.
        var stretched = try Invitation(link: valid)
        stretched.expiresAt += 365 * 86_400
        let tampered = try await runScmesh(["join", "--data-dir", b, "--json", stretched.link], home: home)
        #expect(tampered.status == 1)
        let refusal = try jsonObject(tampered.standardOutput)
        #expect(refusal["ok"] as? Bool == false)
        #expect(refusal["code"] as? String == "badSignature")
        #expect((refusal["message"] as? String)?.contains("changed after") == true)

        // Malformed: cut short while copying.
        let cut = try await runScmesh(["join", "--data-dir", b, String(valid.prefix(59))], home: home)
        #expect(cut.status == 1)
        #expect(cut.standardError.contains("truncated"), "\(cut.standardError)")
        let other = try await runScmesh(["join", "--data-dir", b, "https://example.org/"], home: home)
        #expect(other.standardError.contains("should start with \"scmesh:\""), "\(other.standardError)")

        // Nothing was added by any of them.
        let contacts = try await ControlClient(dataDirectory: b).call(.contacts(.list)).decode(ContactsReply.self)
        #expect(contacts.contacts.isEmpty)
    }
}

/// A PGM image (4 pixels per module) of rows of modules read from a terminal.
private func pgm(_ rows: [[Bool]]) -> [UInt8] {
    let height = rows.count
    let width = rows.map(\.count).max() ?? 0
    let scale = 4
    let margin = 4 * scale
    let pixelWidth = width * scale + 2 * margin
    let pixelHeight = height * scale + 2 * margin
    var image = Array("P5\n\(pixelWidth) \(pixelHeight)\n255\n".utf8)
    for y in 0..<pixelHeight {
        for x in 0..<pixelWidth {
            let row = (y - margin) / scale
            let column = (x - margin) / scale
            let dark = y >= margin && x >= margin && row < height && column < rows[row].count && rows[row][column]
            image.append(dark ? 0 : 255)
        }
    }
    return image
}
