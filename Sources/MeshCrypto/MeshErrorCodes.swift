import MeshCore

// MeshCrypto reports every failure as MeshCore's `MeshError`; these are the codes it
// adds. Link-handshake failures surface as `.handshakeFailed` (the contract of
// `LinkSecurity`) whose `cause` is a `MeshError` with one of the specific codes below.

extension MeshError.Code {
    /// A handshake message is truncated, oversized, or arrived out of turn.
    public static let malformedHandshake = MeshError.Code("malformedHandshake")
    /// The remote's handshake payload (identity + signature) is missing or malformed.
    public static let malformedIdentityProof = MeshError.Code("malformedIdentityProof")
    /// An Ed25519 signature does not verify: the bytes were tampered with or forged.
    public static let badSignature = MeshError.Code("badSignature")
    /// The remote proved an identity other than the one the dialler expected.
    public static let peerMismatch = MeshError.Code("peerMismatch")
    /// A key exchange produced no usable secret (the remote sent a low-order point).
    public static let invalidKey = MeshError.Code("invalidKey")
    /// An AEAD tag did not verify: the ciphertext was tampered with, or (on a link) a
    /// message was lost, replayed or reordered beyond what could be told apart.
    public static let decryptFailed = MeshError.Code("decryptFailed")
    /// A link message authenticated under an earlier nonce: it is a replay.
    public static let replay = MeshError.Code("replay")
    /// A link message authenticated under a later nonce: messages were reordered or lost.
    public static let reordered = MeshError.Code("reordered")
    /// The session cipher failed before and refuses further use; close the link.
    public static let cipherFailed = MeshError.Code("cipherFailed")
    /// An envelope is shorter than its fixed layout.
    public static let envelopeTruncated = MeshError.Code("envelopeTruncated")
    /// An envelope has an unknown version or an impossible field.
    public static let envelopeMalformed = MeshError.Code("envelopeMalformed")
    /// An envelope is addressed to another peer.
    public static let wrongRecipient = MeshError.Code("wrongRecipient")
    /// The identity key file is readable by group or others.
    public static let identityFileInsecure = MeshError.Code("identityFileInsecure")
    /// The identity key file does not parse or its keys do not match.
    public static let identityFileCorrupt = MeshError.Code("identityFileCorrupt")
    /// Reading or writing the identity key file failed at the OS level.
    public static let identityFileIO = MeshError.Code("identityFileIO")
    /// An invitation link does not parse: wrong prefix, bad base64url, unknown
    /// version, or fields that overrun or violate their limits (docs/PROTOCOL.md J).
    public static let invitationMalformed = MeshError.Code("invitationMalformed")
    /// An invitation's expiry time has passed.
    public static let invitationExpired = MeshError.Code("invitationExpired")
}
