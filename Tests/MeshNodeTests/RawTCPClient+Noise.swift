import TestSupport
import Testing

extension RawTCPClient {
    /// Plays the initiator's half of a Noise XX handshake: sends a valid message 1 (the
    /// X25519 base point as the ephemeral key) and reads the node's message 2.
    func sendMessage1AndReadMessage2() async throws {
        // On the wire: length 33, whole-segment packet flag 0xC0, the 32-byte key.
        try write([0, 33, 0xC0, 9] + [UInt8](repeating: 0, count: 31))
        let prefix = try await read(count: 2, "the length of the node's message 2")
        let length = Int(prefix[0]) << 8 | Int(prefix[1])
        // Flag + e (32) + encrypted s (32 + 16) + encrypted identity proof (99 + 16).
        #expect(length == 1 + 195)
        let message2 = try await read(count: length, "the node's message 2")
        #expect(message2.first == 0xC0)
    }
}
