extension ATTPDU {
    /// The PDU's bytes. Lists are written as given: ``findInformationResponse(_:)``
    /// takes the UUID size of its first entry, the two "length" responses the value
    /// length of their first entry (a caller keeps them uniform, as the server does).
    public func encoded() -> [UInt8] {
        var out: [UInt8] = [opcode]
        switch self {
        case .errorResponse(let request, let handle, let error):
            out.append(request)
            out.attAppendLE16(handle)
            out.append(error.rawValue)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            out.attAppendLE16(mtu)
        case .findInformationRequest(let start, let end):
            out.attAppendLE16(start)
            out.attAppendLE16(end)
        case .findInformationResponse(let entries):
            out.append(entries.first?.uuid.isShort == false ? 2 : 1)
            for entry in entries {
                out.attAppendLE16(entry.handle)
                out += entry.uuid.bytes
            }
        case .findByTypeValueRequest(let start, let end, let type, let value):
            out.attAppendLE16(start)
            out.attAppendLE16(end)
            out.attAppendLE16(type)
            out += value
        case .findByTypeValueResponse(let entries):
            for entry in entries {
                out.attAppendLE16(entry.handle)
                out.attAppendLE16(entry.groupEnd)
            }
        case .readByTypeRequest(let start, let end, let type), .readByGroupTypeRequest(let start, let end, let type):
            out.attAppendLE16(start)
            out.attAppendLE16(end)
            out += type.bytes
        case .readByTypeResponse(let entries):
            out.append(UInt8(clamping: 2 + (entries.first?.value.count ?? 0)))
            for entry in entries {
                out.attAppendLE16(entry.handle)
                out += entry.value
            }
        case .readRequest(let handle):
            out.attAppendLE16(handle)
        case .readResponse(let value):
            out += value
        case .readByGroupTypeResponse(let entries):
            out.append(UInt8(clamping: 4 + (entries.first?.value.count ?? 0)))
            for entry in entries {
                out.attAppendLE16(entry.handle)
                out.attAppendLE16(entry.groupEnd)
                out += entry.value
            }
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value),
            .notification(let handle, let value), .indication(let handle, let value):
            out.attAppendLE16(handle)
            out += value
        case .writeResponse, .confirmation:
            break
        case .unknown(_, let parameters):
            out += parameters
        }
        return out
    }
}
