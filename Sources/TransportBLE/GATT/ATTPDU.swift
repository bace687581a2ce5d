import MeshCore

/// One Attribute Protocol PDU (Bluetooth Core 5.x, Vol 3 Part F §3.4): the subset a GATT
/// server and client of the seed app's profile exchange, as plain values.
///
/// ``init(decoding:)`` never traps: a short, over-long or inconsistent PDU throws
/// `.malformedFrame` saying which PDU and what is wrong, and an opcode this type does
/// not model decodes as ``unknown(opcode:parameters:)`` (a server answers a request of
/// that kind with ``ATTError/requestNotSupported``). ``encoded()`` of a decoded PDU gives
/// the same bytes back.
public enum ATTPDU: Hashable, Sendable {
    /// `0x01` Error Response: the request that failed, the handle concerned, the reason.
    case errorResponse(request: UInt8, handle: UInt16, error: ATTError)
    /// `0x02` Exchange MTU Request: the client's receive MTU.
    case exchangeMTURequest(clientMTU: UInt16)
    /// `0x03` Exchange MTU Response: the server's receive MTU.
    case exchangeMTUResponse(serverMTU: UInt16)
    /// `0x04` Find Information Request over a handle range.
    case findInformationRequest(start: UInt16, end: UInt16)
    /// `0x05` Find Information Response: handles and attribute types, all of one UUID size.
    case findInformationResponse([HandleUUID])
    /// `0x06` Find By Type Value Request (a 16-bit type and a value; primary service
    /// discovery by UUID).
    case findByTypeValueRequest(start: UInt16, end: UInt16, type: UInt16, value: [UInt8])
    /// `0x07` Find By Type Value Response: handle ranges.
    case findByTypeValueResponse([HandleRange])
    /// `0x08` Read By Type Request.
    case readByTypeRequest(start: UInt16, end: UInt16, type: ATTUUID)
    /// `0x09` Read By Type Response: handle–value pairs, all values one length.
    case readByTypeResponse([HandleValue])
    /// `0x0A` Read Request.
    case readRequest(handle: UInt16)
    /// `0x0B` Read Response.
    case readResponse(value: [UInt8])
    /// `0x10` Read By Group Type Request.
    case readByGroupTypeRequest(start: UInt16, end: UInt16, type: ATTUUID)
    /// `0x11` Read By Group Type Response: groups, all values one length.
    case readByGroupTypeResponse([GroupValue])
    /// `0x12` Write Request (answered by a Write Response or an Error Response).
    case writeRequest(handle: UInt16, value: [UInt8])
    /// `0x13` Write Response.
    case writeResponse
    /// `0x52` Write Command (write without response).
    case writeCommand(handle: UInt16, value: [UInt8])
    /// `0x1B` Handle Value Notification.
    case notification(handle: UInt16, value: [UInt8])
    /// `0x1D` Handle Value Indication (confirmed by ``confirmation``).
    case indication(handle: UInt16, value: [UInt8])
    /// `0x1E` Handle Value Confirmation.
    case confirmation
    /// Any other opcode, with its parameters undecoded.
    case unknown(opcode: UInt8, parameters: [UInt8])

    /// A handle and an attribute type (Find Information Response).
    public struct HandleUUID: Hashable, Sendable {
        /// The attribute handle.
        public var handle: UInt16
        /// The attribute type.
        public var uuid: ATTUUID
        /// Creates one.
        public init(handle: UInt16, uuid: ATTUUID) {
            self.handle = handle
            self.uuid = uuid
        }
    }

    /// A found attribute's handle and its group's last handle (Find By Type Value Response).
    public struct HandleRange: Hashable, Sendable {
        /// The found attribute.
        public var handle: UInt16
        /// The last handle of its group.
        public var groupEnd: UInt16
        /// Creates one.
        public init(handle: UInt16, groupEnd: UInt16) {
            self.handle = handle
            self.groupEnd = groupEnd
        }
    }

    /// An attribute handle and value (Read By Type Response).
    public struct HandleValue: Hashable, Sendable {
        /// The attribute handle.
        public var handle: UInt16
        /// Its value (possibly truncated to fit the MTU).
        public var value: [UInt8]
        /// Creates one.
        public init(handle: UInt16, value: [UInt8]) {
            self.handle = handle
            self.value = value
        }
    }

    /// A group: its declaration handle, its last handle and the declaration's value
    /// (Read By Group Type Response; for services the value is the service UUID).
    public struct GroupValue: Hashable, Sendable {
        /// The group declaration's handle.
        public var handle: UInt16
        /// The last handle of the group.
        public var groupEnd: UInt16
        /// The declaration's value.
        public var value: [UInt8]
        /// Creates one.
        public init(handle: UInt16, groupEnd: UInt16, value: [UInt8]) {
            self.handle = handle
            self.groupEnd = groupEnd
            self.value = value
        }
    }

    /// The opcodes modelled here.
    public enum Opcode {
        /// Error Response.
        public static let errorResponse: UInt8 = 0x01
        /// Exchange MTU Request.
        public static let exchangeMTURequest: UInt8 = 0x02
        /// Exchange MTU Response.
        public static let exchangeMTUResponse: UInt8 = 0x03
        /// Find Information Request.
        public static let findInformationRequest: UInt8 = 0x04
        /// Find Information Response.
        public static let findInformationResponse: UInt8 = 0x05
        /// Find By Type Value Request.
        public static let findByTypeValueRequest: UInt8 = 0x06
        /// Find By Type Value Response.
        public static let findByTypeValueResponse: UInt8 = 0x07
        /// Read By Type Request.
        public static let readByTypeRequest: UInt8 = 0x08
        /// Read By Type Response.
        public static let readByTypeResponse: UInt8 = 0x09
        /// Read Request.
        public static let readRequest: UInt8 = 0x0A
        /// Read Response.
        public static let readResponse: UInt8 = 0x0B
        /// Read By Group Type Request.
        public static let readByGroupTypeRequest: UInt8 = 0x10
        /// Read By Group Type Response.
        public static let readByGroupTypeResponse: UInt8 = 0x11
        /// Write Request.
        public static let writeRequest: UInt8 = 0x12
        /// Write Response.
        public static let writeResponse: UInt8 = 0x13
        /// Write Command.
        public static let writeCommand: UInt8 = 0x52
        /// Handle Value Notification.
        public static let notification: UInt8 = 0x1B
        /// Handle Value Indication.
        public static let indication: UInt8 = 0x1D
        /// Handle Value Confirmation.
        public static let confirmation: UInt8 = 0x1E
    }

    /// The smallest ATT MTU (LE): every device supports it.
    public static let minimumMTU = 23
    /// The largest ATT MTU the profile asks for (an attribute value is at most 512 bytes).
    public static let maximumMTU = 517

    /// This PDU's opcode.
    public var opcode: UInt8 {
        switch self {
        case .errorResponse: Opcode.errorResponse
        case .exchangeMTURequest: Opcode.exchangeMTURequest
        case .exchangeMTUResponse: Opcode.exchangeMTUResponse
        case .findInformationRequest: Opcode.findInformationRequest
        case .findInformationResponse: Opcode.findInformationResponse
        case .findByTypeValueRequest: Opcode.findByTypeValueRequest
        case .findByTypeValueResponse: Opcode.findByTypeValueResponse
        case .readByTypeRequest: Opcode.readByTypeRequest
        case .readByTypeResponse: Opcode.readByTypeResponse
        case .readRequest: Opcode.readRequest
        case .readResponse: Opcode.readResponse
        case .readByGroupTypeRequest: Opcode.readByGroupTypeRequest
        case .readByGroupTypeResponse: Opcode.readByGroupTypeResponse
        case .writeRequest: Opcode.writeRequest
        case .writeResponse: Opcode.writeResponse
        case .writeCommand: Opcode.writeCommand
        case .notification: Opcode.notification
        case .indication: Opcode.indication
        case .confirmation: Opcode.confirmation
        case .unknown(let opcode, _): opcode
        }
    }

    /// What a PDU with `opcode` is, by the opcode alone.
    public enum Kind: Sendable {
        /// A request: the server answers with a response or an Error Response.
        case request
        /// A response to the requester's outstanding request.
        case response
        /// A command (no answer; bit 6 of the opcode).
        case command
        /// A notification or indication from the server.
        case serverInitiated
        /// A confirmation of an indication.
        case confirmation
    }

    /// The kind of an opcode; unknown opcodes with bit 6 (command flag) clear count as
    /// requests, so a server answers them with ``ATTError/requestNotSupported``.
    public static func kind(of opcode: UInt8) -> Kind {
        switch opcode {
        case Opcode.errorResponse, Opcode.exchangeMTUResponse, Opcode.findInformationResponse,
            Opcode.findByTypeValueResponse, Opcode.readByTypeResponse, Opcode.readResponse, 0x0D, 0x0F,
            Opcode.readByGroupTypeResponse, Opcode.writeResponse, 0x17, 0x19, 0x21:
            return .response
        case Opcode.notification, Opcode.indication, 0x23: return .serverInitiated
        case Opcode.confirmation: return .confirmation
        default: return opcode & 0x40 != 0 ? .command : .request
        }
    }

    /// Decodes one PDU.
    /// - Throws: `.malformedFrame` naming the PDU and the problem (empty input, a
    ///   parameter too short or too long, an inconsistent list, a bad UUID size).
    public init(decoding pdu: [UInt8]) throws(MeshError) {
        guard let opcode = pdu.first else { throw MeshError(.malformedFrame, "empty ATT PDU") }
        var reader = Reader(bytes: pdu, position: 1, name: Self.name(of: opcode))
        switch opcode {
        case Opcode.errorResponse:
            let request = try reader.byte()
            let handle = try reader.le16()
            let code = try reader.byte()
            try reader.end()
            self = .errorResponse(request: request, handle: handle, error: ATTError(rawValue: code))
        case Opcode.exchangeMTURequest:
            let mtu = try reader.le16()
            try reader.end()
            self = .exchangeMTURequest(clientMTU: mtu)
        case Opcode.exchangeMTUResponse:
            let mtu = try reader.le16()
            try reader.end()
            self = .exchangeMTUResponse(serverMTU: mtu)
        case Opcode.findInformationRequest:
            let (start, end) = try reader.range()
            try reader.end()
            self = .findInformationRequest(start: start, end: end)
        case Opcode.findInformationResponse:
            let format = try reader.byte()
            let size: Int
            switch format {
            case 1: size = 2
            case 2: size = 16
            default: throw reader.error("format \(format) is neither 1 (16-bit UUIDs) nor 2 (128-bit UUIDs)")
            }
            let entries = try reader.entries(of: 2 + size)
            self = .findInformationResponse(
                entries.map { HandleUUID(handle: $0.attLE16(at: 0), uuid: ATTUUID(wire: $0[2...])!) }
            )
        case Opcode.findByTypeValueRequest:
            let (start, end) = try reader.range()
            let type = try reader.le16()
            self = .findByTypeValueRequest(start: start, end: end, type: type, value: reader.rest())
        case Opcode.findByTypeValueResponse:
            let entries = try reader.entries(of: 4)
            self = .findByTypeValueResponse(
                entries.map { HandleRange(handle: $0.attLE16(at: 0), groupEnd: $0.attLE16(at: 2)) }
            )
        case Opcode.readByTypeRequest, Opcode.readByGroupTypeRequest:
            let (start, end) = try reader.range()
            guard let type = ATTUUID(wire: reader.rest()) else {
                throw reader.error("attribute type of \(pdu.count - 5) bytes is neither a 16-bit nor a 128-bit UUID")
            }
            self =
                opcode == Opcode.readByTypeRequest
                ? .readByTypeRequest(start: start, end: end, type: type)
                : .readByGroupTypeRequest(start: start, end: end, type: type)
        case Opcode.readByTypeResponse:
            let length = Int(try reader.byte())
            guard length >= 2 else { throw reader.error("entry length \(length) is shorter than a handle") }
            let entries = try reader.entries(of: length)
            self = .readByTypeResponse(entries.map { HandleValue(handle: $0.attLE16(at: 0), value: Array($0[2...])) })
        case Opcode.readRequest:
            let handle = try reader.le16()
            try reader.end()
            self = .readRequest(handle: handle)
        case Opcode.readResponse:
            self = .readResponse(value: reader.rest())
        case Opcode.readByGroupTypeResponse:
            let length = Int(try reader.byte())
            guard length >= 4 else { throw reader.error("entry length \(length) is shorter than two handles") }
            let entries = try reader.entries(of: length)
            self = .readByGroupTypeResponse(
                entries.map {
                    GroupValue(handle: $0.attLE16(at: 0), groupEnd: $0.attLE16(at: 2), value: Array($0[4...]))
                }
            )
        case Opcode.writeRequest, Opcode.writeCommand, Opcode.notification, Opcode.indication:
            let handle = try reader.le16()
            let value = reader.rest()
            switch opcode {
            case Opcode.writeRequest: self = .writeRequest(handle: handle, value: value)
            case Opcode.writeCommand: self = .writeCommand(handle: handle, value: value)
            case Opcode.notification: self = .notification(handle: handle, value: value)
            default: self = .indication(handle: handle, value: value)
            }
        case Opcode.writeResponse, Opcode.confirmation:
            try reader.end()
            self = opcode == Opcode.writeResponse ? .writeResponse : .confirmation
        default:
            self = .unknown(opcode: opcode, parameters: Array(pdu.dropFirst()))
        }
    }

    /// A readable name for an opcode (in errors and logs).
    public static func name(of opcode: UInt8) -> String {
        switch opcode {
        case Opcode.errorResponse: "Error Response"
        case Opcode.exchangeMTURequest: "Exchange MTU Request"
        case Opcode.exchangeMTUResponse: "Exchange MTU Response"
        case Opcode.findInformationRequest: "Find Information Request"
        case Opcode.findInformationResponse: "Find Information Response"
        case Opcode.findByTypeValueRequest: "Find By Type Value Request"
        case Opcode.findByTypeValueResponse: "Find By Type Value Response"
        case Opcode.readByTypeRequest: "Read By Type Request"
        case Opcode.readByTypeResponse: "Read By Type Response"
        case Opcode.readRequest: "Read Request"
        case Opcode.readResponse: "Read Response"
        case Opcode.readByGroupTypeRequest: "Read By Group Type Request"
        case Opcode.readByGroupTypeResponse: "Read By Group Type Response"
        case Opcode.writeRequest: "Write Request"
        case Opcode.writeResponse: "Write Response"
        case Opcode.writeCommand: "Write Command"
        case Opcode.notification: "Handle Value Notification"
        case Opcode.indication: "Handle Value Indication"
        case Opcode.confirmation: "Handle Value Confirmation"
        default: "ATT opcode 0x\(String(opcode, radix: 16))"
        }
    }

    /// A bounds-checked cursor over a PDU.
    private struct Reader {
        let bytes: [UInt8]
        var position: Int
        let name: String

        func error(_ problem: String) -> MeshError {
            MeshError(.malformedFrame, "ATT \(name) of \(bytes.count) bytes: \(problem)")
        }

        mutating func byte() throws(MeshError) -> UInt8 {
            guard position < bytes.count else { throw error("ends at byte \(position)") }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func le16() throws(MeshError) -> UInt16 {
            guard position + 2 <= bytes.count else {
                throw error("ends at byte \(bytes.count), inside a 2-byte field at \(position)")
            }
            defer { position += 2 }
            return bytes.attLE16(at: position)
        }

        mutating func range() throws(MeshError) -> (UInt16, UInt16) {
            (try le16(), try le16())
        }

        mutating func rest() -> [UInt8] {
            defer { position = bytes.count }
            return Array(bytes[position...])
        }

        func end() throws(MeshError) {
            guard position == bytes.count else {
                throw error("\(bytes.count - position) unexpected bytes after byte \(position)")
            }
        }

        /// The rest as a non-empty list of `size`-byte entries.
        mutating func entries(of size: Int) throws(MeshError) -> [[UInt8]] {
            let remaining = bytes.count - position
            guard remaining > 0 else { throw error("has no entries") }
            guard remaining % size == 0 else {
                throw error("\(remaining) bytes of entries are not a multiple of the entry length \(size)")
            }
            var entries: [[UInt8]] = []
            while position < bytes.count {
                entries.append(Array(bytes[position..<position + size]))
                position += size
            }
            return entries
        }
    }
}
