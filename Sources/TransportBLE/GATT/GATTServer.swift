import MeshCore

/// The GATT server of one ATT bearer: the seed profile's attribute database and the
/// answers to a client's requests, as a synchronous state machine (no I/O, so it is
/// tested without Bluetooth).
///
/// The database (handles are fixed; a client discovers them anyway):
///
/// | handle | type | value |
/// | --- | --- | --- |
/// | 1 | Primary Service `0x2800` | ``GATTProfile/service`` |
/// | 2 | Characteristic `0x2803` | write + write without response, handle 3, ``GATTProfile/tx`` |
/// | 3 | TX value | written by the client: one frame per write |
/// | 4 | Characteristic `0x2803` | notify, handle 5, ``GATTProfile/rx`` |
/// | 5 | RX value | notified: one frame per notification |
/// | 6 | CCCD `0x2902` | 2 bytes, bit 0 = notifications on |
/// | 7 | Characteristic `0x2803` | read, handle 8, ``GATTProfile/identity`` |
/// | 8 | identity value | ``GATTIdentity`` |
public struct GATTServer: Sendable {
    /// The service declaration's handle.
    public static let serviceHandle: UInt16 = 1
    /// TX's value handle.
    public static let txHandle: UInt16 = 3
    /// RX's value handle.
    public static let rxHandle: UInt16 = 5
    /// RX's CCCD handle.
    public static let rxCCCDHandle: UInt16 = 6
    /// The identity value handle.
    public static let identityHandle: UInt16 = 8
    /// The last handle of the service.
    public static let lastHandle: UInt16 = 8

    /// What a handled PDU asks the bearer's owner to do besides sending the response.
    public enum Event: Hashable, Sendable {
        /// The client wrote a frame to TX (an empty one is the move-to-L2CAP marker).
        case received([UInt8])
        /// The client switched RX notifications on (true) or off (false).
        case subscribed(Bool)
    }

    /// The identity characteristic's current value.
    public var identity: [UInt8]
    /// The receive MTU this server offers in an MTU exchange.
    public let receiveMTU: UInt16
    /// The ATT MTU in force (23 until an exchange).
    public var mtu = ATTPDU.minimumMTU
    /// Whether the client enabled RX notifications (its CCCD value, bit 0).
    public private(set) var notifying = false
    private var cccd: UInt16 = 0

    private struct Attribute {
        var handle: UInt16
        var type: ATTUUID
        var value: [UInt8]
        var readable = true
    }

    /// A server with `identity` as the identity value.
    public init(identity: [UInt8], receiveMTU: UInt16 = UInt16(ATTPDU.maximumMTU)) {
        self.identity = identity
        self.receiveMTU = max(UInt16(ATTPDU.minimumMTU), receiveMTU)
    }

    private func declaration(_ properties: UInt8, _ valueHandle: UInt16, _ uuid: ATTUUID) -> [UInt8] {
        var value = [properties]
        value.attAppendLE16(valueHandle)
        return value + uuid.bytes
    }

    private var attributes: [Attribute] {
        let property = GATTProfile.Property.self
        var cccdValue: [UInt8] = []
        cccdValue.attAppendLE16(cccd)
        return [
            Attribute(handle: 1, type: .primaryService, value: GATTProfile.service.bytes),
            Attribute(
                handle: 2,
                type: .characteristic,
                value: declaration(property.write | property.writeWithoutResponse, 3, GATTProfile.tx)
            ),
            Attribute(handle: 3, type: GATTProfile.tx, value: [], readable: false),
            Attribute(handle: 4, type: .characteristic, value: declaration(property.notify, 5, GATTProfile.rx)),
            Attribute(handle: 5, type: GATTProfile.rx, value: [], readable: false),
            Attribute(handle: 6, type: .clientCharacteristicConfiguration, value: cccdValue),
            Attribute(handle: 7, type: .characteristic, value: declaration(property.read, 8, GATTProfile.identity)),
            Attribute(handle: 8, type: GATTProfile.identity, value: identity),
        ]
    }

    /// Handles one PDU from the client.
    /// - Returns: the response to send (nil for a command, or for a PDU that is not the
    ///   server's to answer: responses, notifications, confirmations) and the events.
    public mutating func handle(_ bytes: [UInt8]) -> (response: [UInt8]?, events: [Event]) {
        guard let opcode = bytes.first else { return (nil, []) }
        let kind = ATTPDU.kind(of: opcode)
        guard kind == .request || kind == .command else { return (nil, []) }
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU(decoding: bytes)
        } catch {
            return (
                kind == .request ? ATTPDU.errorResponse(request: opcode, handle: 0, error: .invalidPDU).encoded() : nil,
                []
            )
        }
        var events: [Event] = []
        let response = answer(pdu, events: &events)
        return (response.map { clip($0.encoded()) }, events)
    }

    /// A notification of `frame` on RX, or nil while the client has not enabled
    /// notifications or the frame exceeds the MTU − 3.
    public func notification(_ frame: [UInt8]) -> [UInt8]? {
        guard notifying, frame.count <= mtu - 3 else { return nil }
        return ATTPDU.notification(handle: Self.rxHandle, value: frame).encoded()
    }

    private func clip(_ pdu: [UInt8]) -> [UInt8] { pdu.count > mtu ? Array(pdu.prefix(mtu)) : pdu }

    private mutating func answer(_ pdu: ATTPDU, events: inout [Event]) -> ATTPDU? {
        func error(_ code: ATTError, _ handle: UInt16 = 0) -> ATTPDU {
            .errorResponse(request: pdu.opcode, handle: handle, error: code)
        }
        func validRange(_ start: UInt16, _ end: UInt16) -> Bool { start != 0 && start <= end }
        switch pdu {
        case .exchangeMTURequest(let clientMTU):
            mtu = max(ATTPDU.minimumMTU, min(Int(clientMTU), Int(receiveMTU)))
            return .exchangeMTUResponse(serverMTU: receiveMTU)

        case .findInformationRequest(let start, let end):
            guard validRange(start, end) else { return error(.invalidHandle, start) }
            let found = attributes.filter { $0.handle >= start && $0.handle <= end }
            guard let first = found.first else { return error(.attributeNotFound, start) }
            var entries: [ATTPDU.HandleUUID] = []
            var size = 2
            for attribute in found where attribute.type.isShort == first.type.isShort {
                let entrySize = 2 + attribute.type.bytes.count
                if size + entrySize > mtu { break }
                size += entrySize
                entries.append(.init(handle: attribute.handle, uuid: attribute.type))
            }
            return .findInformationResponse(entries)

        case .findByTypeValueRequest(let start, let end, let type, let value):
            guard validRange(start, end) else { return error(.invalidHandle, start) }
            let matches = attributes.filter {
                $0.handle >= start && $0.handle <= end && $0.type.shortValue == type && $0.value == value && $0.readable
            }
            guard !matches.isEmpty else { return error(.attributeNotFound, start) }
            let grouping = type == 0x2800 || type == 0x2801
            let ranges = matches.prefix((mtu - 1) / 4).map {
                ATTPDU.HandleRange(handle: $0.handle, groupEnd: grouping ? Self.lastHandle : $0.handle)
            }
            return .findByTypeValueResponse(Array(ranges))

        case .readByTypeRequest(let start, let end, let type):
            guard validRange(start, end) else { return error(.invalidHandle, start) }
            let found = attributes.filter { $0.handle >= start && $0.handle <= end && $0.type == type }
            guard let first = found.first else { return error(.attributeNotFound, start) }
            guard first.readable else { return error(.readNotPermitted, first.handle) }
            let length = min(first.value.count, mtu - 4, 253)
            var entries: [ATTPDU.HandleValue] = []
            var size = 2
            for attribute in found {
                guard attribute.readable, min(attribute.value.count, mtu - 4, 253) == length, size + 2 + length <= mtu
                else { break }
                size += 2 + length
                entries.append(.init(handle: attribute.handle, value: Array(attribute.value.prefix(length))))
            }
            return .readByTypeResponse(entries)

        case .readByGroupTypeRequest(let start, let end, let type):
            guard validRange(start, end) else { return error(.invalidHandle, start) }
            guard type == .primaryService || type == .secondaryService else {
                return error(.unsupportedGroupType, start)
            }
            let found = attributes.filter { $0.handle >= start && $0.handle <= end && $0.type == type }
            guard let first = found.first else { return error(.attributeNotFound, start) }
            let length = min(first.value.count, mtu - 6)
            return .readByGroupTypeResponse([
                .init(handle: first.handle, groupEnd: Self.lastHandle, value: Array(first.value.prefix(length)))
            ])

        case .readRequest(let handle):
            guard let attribute = attributes.first(where: { $0.handle == handle }) else {
                return error(.invalidHandle, handle)
            }
            guard attribute.readable else { return error(.readNotPermitted, handle) }
            return .readResponse(value: Array(attribute.value.prefix(mtu - 1)))

        case .writeRequest(let handle, let value), .writeCommand(let handle, let value):
            let isRequest = pdu.opcode == ATTPDU.Opcode.writeRequest
            let failure: ATTError?
            switch handle {
            case Self.txHandle:
                events.append(.received(value))
                failure = nil
            case Self.rxCCCDHandle:
                if value.count == 2 {
                    let was = notifying
                    cccd = value.attLE16(at: 0)
                    notifying = cccd & 1 != 0
                    if was != notifying { events.append(.subscribed(notifying)) }
                    failure = nil
                } else {
                    failure = .invalidAttributeValueLength
                }
            case 1...Self.lastHandle:
                failure = .writeNotPermitted
            default:
                failure = .invalidHandle
            }
            guard isRequest else { return nil }
            if let failure { return error(failure, handle) }
            return .writeResponse

        case .unknown:
            return pdu.opcode & 0x40 == 0 ? error(.requestNotSupported) : nil

        default:
            // Responses, notifications, confirmations: filtered out before; a request
            // kind this server does not serve.
            return error(.requestNotSupported)
        }
    }
}
