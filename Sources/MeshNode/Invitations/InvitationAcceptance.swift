import Foundation
import Logging
import MeshCore
import MeshStore

/// Mutual invitations: the message a joiner sends the inviter after `scmesh join`,
/// and what the inviter does with it.
///
/// The joiner queues one ordinary message (sealed and signed like any) to the
/// inviting node: the bytes `SCMesh invitation accepted v1`, a newline, the
/// invitation's ID (16 hex characters, from its signature, so only holders of the
/// link know it), a newline, and the joiner's `node.name` (possibly empty). The inviter
/// takes such a message before the contact filter (so an allow-list inviter hears the
/// person it invited) and never stores it in the inbox: when the ID names an
/// invitation it issued that is neither revoked nor expired, it records the join, adds
/// the joiner as a contact (alias: its name when free and valid, else `peer-<8 hex>`)
/// and records an `invite_accepted` event; otherwise it logs why and drops it.
public struct InvitationAcceptance: Sendable {
    /// The payload's first line.
    public static let magic = "SCMesh invitation accepted v1"

    /// The payload the joiner sends.
    public static func payload(invitationID: String, name: String?) -> [UInt8] {
        Array("\(magic)\n\(invitationID)\n\(name ?? "")".utf8)
    }

    /// What ``take(_:)`` did.
    public enum Outcome: Sendable, Equatable {
        /// Not an acceptance: the message goes on to the inbox.
        case notAnAcceptance
        /// An acceptance, handled (and not for the inbox); `contactAdded` when the
        /// contact book changed.
        case handled(contactAdded: Bool)
    }

    let invitations: IssuedInvitations
    let contacts: Contacts
    let events: EventLog?
    let logger: Logger

    /// Handles `message` when it is an acceptance.
    /// - Throws: ``MeshError`` when the store cannot be written (the router then does
    ///   not acknowledge it and the joiner retries).
    public func take(_ message: InboundMessage) async throws -> Outcome {
        let prefix = Array((Self.magic + "\n").utf8)
        guard message.topic == nil, message.payload.count <= 512, message.payload.starts(with: prefix) else {
            return .notAnAcceptance
        }
        let rest = String(decoding: message.payload.dropFirst(prefix.count), as: UTF8.self)
        let lines = rest.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        let id = String(lines.first ?? "").lowercased()
        let name = lines.count > 1 ? String(lines[1]).trimmingCharacters(in: .whitespaces) : ""
        guard id.count == 16, id.allSatisfy(\.isHexDigit) else {
            logger.notice("dropped a malformed invitation acceptance from \(message.from.short)")
            return .handled(contactAdded: false)
        }
        if let refusal = try await invitations.recordJoin(id: id, peer: message.from) {
            logger.notice("ignored \(message.from.short)'s acceptance of invitation \(id): \(refusal)")
            return .handled(contactAdded: false)
        }
        var alias = try await contacts.contact(peer: message.from)?.alias
        var added = false
        if alias == nil {
            let note = "joined by invitation \(id)"
            if !name.isEmpty, (try? await contacts.contact(alias: name)) == nil,
                (try? ControlHandler.requirePrintableAlias(name)) != nil,
                (try? await contacts.add(peer: message.from, alias: name, note: note)) != nil
            {
                alias = name
            } else {
                alias = ControlHandler.placeholderAlias(message.from)
                try await contacts.add(peer: message.from, alias: alias!, note: note)
            }
            added = true
        }
        logger.info("\(alias ?? message.from.short) (\(message.from.short)) joined by invitation \(id)")
        events?.append(
            RouterEvent(
                RouterEvent.Kind("invite_accepted"),
                peer: message.from,
                reason: "\(alias ?? "") joined by invitation \(id)"
            )
        )
        return .handled(contactAdded: added)
    }
}
