import MeshCore

/// A ``Link`` over the seed profile's GATT characteristics on one ATT bearer.
///
/// - **Central** (it dialled, it is the GATT client): ``send(_:)`` writes the frame to
///   the remote's TX with a Write Request and returns on the Write Response, so one write
///   is in flight (the seed's "never overlap writes"); frames arrive as notifications of
///   the remote's RX.
/// - **Peripheral** (the remote subscribed to our RX): ``send(_:)`` notifies the frame
///   on RX; frames arrive as writes to our TX.
///
/// ``mtu`` is the ATT MTU − 3 (a notification's and a write's header). The core
/// fragments to it and runs the Noise handshake on the link as on any other.
package final class GATTLink: Link, Sendable {
    /// Which side of the GATT relation this end is.
    package enum Role: Sendable {
        /// GATT client: writes TX, receives RX notifications.
        case central(txHandle: UInt16)
        /// GATT server: notifies RX, receives TX writes.
        case peripheral
    }

    /// The remote's address in the transport's notation.
    package let remoteAddress: String
    /// ATT MTU − 3.
    package let mtu: Int
    /// This end's role.
    package let role: Role
    /// The bearer's connection.
    package let connection: GATTConnection
    private let onClose: (@Sendable () -> Void)?

    /// A link on `connection` whose set-up (client discovery and subscription, or the
    /// remote's subscription) is done.
    package init(connection: GATTConnection, role: Role, remoteAddress: String, onClose: (@Sendable () -> Void)? = nil) {
        self.connection = connection
        self.role = role
        self.remoteAddress = remoteAddress
        self.mtu = connection.mtu - 3
        self.onClose = onClose
    }

    /// Sends one frame (a TX write or an RX notification).
    /// - Throws: `.frameTooLarge` over ``mtu``, `.invalidArgument` for an empty frame,
    ///   `.linkClosed` when the bearer ended, the remote refused the write, or (as
    ///   peripheral) the remote switched notifications off.
    package func send(_ frame: [UInt8]) async throws {
        guard frame.count <= mtu else {
            throw MeshError(.frameTooLarge, "frame of \(frame.count) bytes exceeds the GATT link MTU of \(mtu) bytes (ATT MTU − 3); fragment it first")
        }
        guard !frame.isEmpty else { throw MeshError(.invalidArgument, "an empty frame cannot be sent on a GATT link") }
        switch role {
        case .central(let txHandle):
            do {
                try await connection.write(handle: txHandle, value: frame)
            } catch let error as MeshError where error.code == .dialFailed {
                await close()
                throw MeshError(.linkClosed, "GATT link to \(remoteAddress): \(error.message)", cause: error)
            }
        case .peripheral:
            guard connection.remoteSubscribed else {
                throw MeshError(.linkClosed, "GATT link to \(remoteAddress): the remote switched RX notifications off")
            }
            try await connection.sendUnacknowledged(ATTPDU.notification(handle: GATTServer.rxHandle, value: frame).encoded())
        }
    }

    /// The next frame, nil once the bearer ended.
    package func receive() async throws -> [UInt8]? {
        switch role {
        case .central: await connection.notifiedFrames.receive()
        case .peripheral: await connection.writtenFrames.receive()
        }
    }

    /// Closes the bearer. Idempotent.
    package func close() async {
        await connection.close()
        onClose?()
    }
}
