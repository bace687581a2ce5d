import MeshCore
import Testing

@testable import MeshCrypto

@Suite("invitations")
struct InvitationTests {
    let identity = try! NodeIdentity(seed: [UInt8](repeating: 7, count: 32))
    let now: Int64 = 1_800_000_000
    let addresses = [
        Invitation.Address(transport: "tcp", address: "192.0.2.7:7420"),
        Invitation.Address(transport: "tcp", address: "[2001:db8::7]:7420"),
    ]

    func make(name: String? = "alice", expiresIn seconds: Int64 = 86_400) throws -> Invitation {
        try Invitation.signed(by: identity, name: name, addresses: addresses, expiresAt: UInt32(now + seconds))
    }

    @Test("a link round-trips: same peer, name, addresses and expiry; it verifies; it is short")
    func roundTrip() throws {
        let invitation = try make()
        let link = invitation.link
        #expect(link.hasPrefix("scmesh:"))
        #expect(link.allSatisfy { $0.isASCII && !$0.isWhitespace })
        let parsed = try Invitation(link: "  \(link)\n")
        #expect(parsed == invitation)
        #expect(parsed.peerID == identity.peerID)
        #expect(parsed.name == "alice")
        #expect(parsed.addresses == addresses)
        #expect(parsed.expiresAt == UInt32(now + 86_400))
        try parsed.verify(now: now)
        // 1 + 32 + 4 + 6 + 1 + (1+3+1+14) + (1+3+1+18) + 64 = 150 bytes → 200 characters.
        #expect(try invitation.encoded().count == 150)
        #expect(link.count == 7 + 200)
    }

    @Test("no name and no addresses is still an invitation")
    func minimal() throws {
        let invitation = try Invitation.signed(by: identity, name: nil, addresses: [], expiresAt: UInt32(now + 60))
        let parsed = try Invitation(link: invitation.link)
        #expect(parsed.name == nil)
        #expect(parsed.addresses.isEmpty)
        try parsed.verify(now: now)
    }

    @Test("an expired invitation is refused as expired, saying how long ago")
    func expired() throws {
        let invitation = try Invitation(link: try make(expiresIn: -7_200).link)
        let error = try #require(throws: MeshError.self) { try invitation.verify(now: now) }
        #expect(error.code == .invitationExpired)
        #expect(error.message.contains("expired 2 h 0 min ago"))
        // One second before the expiry it is still valid.
        try Invitation(link: try make(expiresIn: 1).link).verify(now: now)
    }

    @Test(
        "every changed byte of the signed part or the signature is caught",
        arguments: [0, 1, 20, 33, 36, 38, 45, 60, 100, 149]
    )
    func tampered(offset: Int) throws {
        var bytes = try make().encoded()
        bytes[offset] ^= 0x01
        let link = Invitation.linkPrefix + Base64URL.encode(bytes)
        do {
            let parsed = try Invitation(link: link)
            let error = try #require(throws: MeshError.self) { try parsed.verify(now: now) }
            #expect(error.code == .badSignature)
            #expect(error.message.contains("changed after"))
        } catch let error as MeshError {
            // Flipping a version or length byte breaks the structure instead.
            #expect(error.code == .invitationMalformed)
        }
    }

    @Test("an invitation signed by another key under this peer ID does not verify")
    func forged() throws {
        let other = try NodeIdentity(seed: [UInt8](repeating: 9, count: 32))
        var forged = try Invitation.signed(by: other, name: "alice", addresses: addresses, expiresAt: UInt32(now + 60))
        forged.peerID = identity.peerID
        let error = try #require(throws: MeshError.self) { try Invitation(link: forged.link).verify(now: now) }
        #expect(error.code == .badSignature)
    }

    @Test(
        "malformed links are refused with what is wrong",
        arguments: [
            ("hello", "should start with \"scmesh:\""),
            ("scmesh:***", "not valid base64url"),
            ("scmesh:A", "not valid base64url"),
            ("scmesh:", "truncated in its version"),
            ("scmesh:Ag", "format version 2"),
            ("scmesh:AQAA", "truncated in its peer ID"),
        ]
    )
    func malformed(link: String, expected: String) {
        let error = #expect(throws: MeshError.self) { try Invitation(link: link) }
        #expect(error?.code == .invitationMalformed)
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
    }

    @Test("a truncated link and one with trailing bytes are malformed")
    func truncatedAndTrailing() throws {
        let bytes = try make().encoded()
        for cut in [1, 10, 64, 100] {
            let error = #expect(throws: MeshError.self) {
                try Invitation(link: Invitation.linkPrefix + Base64URL.encode(Array(bytes.dropLast(cut))))
            }
            #expect(error?.code == .invitationMalformed)
        }
        let error = #expect(throws: MeshError.self) {
            try Invitation(link: Invitation.linkPrefix + Base64URL.encode(bytes + [0]))
        }
        #expect(error?.message.contains("after its signature") == true)
    }

    @Test("limits: names over 64 bytes, more than 8 addresses, non-ASCII addresses are refused when signing")
    func limits() {
        #expect(throws: MeshError.self) {
            try Invitation.signed(by: identity, name: String(repeating: "é", count: 33), addresses: [], expiresAt: 1)
        }
        #expect(throws: MeshError.self) {
            try Invitation.signed(
                by: identity,
                name: nil,
                addresses: Array(repeating: addresses[0], count: 9),
                expiresAt: 1
            )
        }
        #expect(throws: MeshError.self) {
            try Invitation.signed(
                by: identity,
                name: nil,
                addresses: [.init(transport: "tcp", address: "hôte:1")],
                expiresAt: 1
            )
        }
    }

    @Test("base64url matches RFC 4648's test vectors (unpadded) and rejects non-canonical text")
    func base64url() {
        let vectors = [
            "": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy",
        ]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(Substring(encoded)) == Array(plain.utf8))
        }
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("Zh") == nil)  // unused bits set
        #expect(Base64URL.decode("Zm9v=") == nil)
        #expect(Base64URL.decode("Z") == nil)
    }
}

extension InvitationTests {
    @Test("docs/PROTOCOL.md C.2's example: a 5-byte name and one address make 127 bytes, 177 characters")
    func protocolExample() throws {
        let invitation = try Invitation.signed(
            by: identity,
            name: "alice",
            addresses: [.init(transport: "tcp", address: "192.0.2.7:7420")],
            expiresAt: 1
        )
        #expect(try invitation.encoded().count == 127)
        #expect(invitation.link.count == 177)
    }
}
