import MeshCore
import Testing

@testable import TransportBLE

@Suite("ATT PDU codec")
struct ATTPDUTests {
    static let uuid128 = GATTProfile.service

    static let samples: [ATTPDU] = [
        .errorResponse(request: 0x0A, handle: 0x0102, error: .readNotPermitted),
        .exchangeMTURequest(clientMTU: 517),
        .exchangeMTUResponse(serverMTU: 247),
        .findInformationRequest(start: 1, end: 0xFFFF),
        .findInformationResponse([.init(handle: 1, uuid: ATTUUID(0x2800)), .init(handle: 6, uuid: ATTUUID(0x2902))]),
        .findInformationResponse([.init(handle: 3, uuid: uuid128)]),
        .findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800, value: uuid128.bytes),
        .findByTypeValueResponse([.init(handle: 1, groupEnd: 8), .init(handle: 9, groupEnd: 12)]),
        .readByTypeRequest(start: 1, end: 8, type: .characteristic),
        .readByTypeRequest(start: 1, end: 8, type: GATTProfile.identity),
        .readByTypeResponse([.init(handle: 2, value: [0x0C, 3, 0] + GATTProfile.tx.bytes)]),
        .readRequest(handle: 8),
        .readResponse(value: [1, 2, 3]),
        .readResponse(value: []),
        .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService),
        .readByGroupTypeResponse([.init(handle: 1, groupEnd: 8, value: uuid128.bytes)]),
        .writeRequest(handle: 3, value: [9, 8, 7]),
        .writeResponse,
        .writeCommand(handle: 3, value: [1]),
        .notification(handle: 5, value: Array(repeating: 0xAB, count: 514)),
        .indication(handle: 5, value: [1]),
        .confirmation,
        .unknown(opcode: 0x0C, parameters: [1, 0, 0, 0]),
    ]

    @Test("every PDU kind round-trips through its wire bytes")
    func roundTrip() throws {
        for pdu in Self.samples {
            let bytes = pdu.encoded()
            #expect(bytes.first == pdu.opcode)
            #expect(try ATTPDU(decoding: bytes) == pdu, "\(pdu)")
        }
    }

    @Test("wire bytes match the Core specification's layouts")
    func wireLayouts() {
        #expect(ATTPDU.exchangeMTURequest(clientMTU: 517).encoded() == [0x02, 0x05, 0x02])
        #expect(
            ATTPDU.errorResponse(request: 0x10, handle: 9, error: .attributeNotFound).encoded() == [
                0x01, 0x10, 0x09, 0x00, 0x0A,
            ]
        )
        #expect(
            ATTPDU.readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService).encoded() == [
                0x10, 1, 0, 0xFF, 0xFF, 0x00, 0x28,
            ]
        )
        #expect(ATTPDU.writeCommand(handle: 3, value: [0xAA]).encoded() == [0x52, 3, 0, 0xAA])
        #expect(ATTPDU.notification(handle: 5, value: [1, 2]).encoded() == [0x1B, 5, 0, 1, 2])
        #expect(ATTPDU.readByTypeResponse([.init(handle: 8, value: [1, 2, 3])]).encoded() == [0x09, 5, 8, 0, 1, 2, 3])
        #expect(GATTProfile.service.description == "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
        #expect(GATTProfile.service.bytes.first == 0x9E)
        #expect(try! ATTUUID(parsing: "6e400003-b5a3-f393-e0a9-e50e24dcca9e") == GATTProfile.rx)
    }

    @Test("truncated, over-long and inconsistent PDUs throw malformedFrame naming the PDU")
    func malformed() {
        let bad: [([UInt8], String)] = [
            ([], "empty"),
            ([0x01, 0x0A, 0x01], "Error Response"),
            ([0x01, 0x0A, 0x01, 0x00, 0x02, 0xFF], "Error Response"),
            ([0x02, 0x17], "Exchange MTU Request"),
            ([0x03, 0x17, 0x00, 0x00], "Exchange MTU Response"),
            ([0x04, 0x01, 0x00, 0xFF], "Find Information Request"),
            ([0x05, 0x03, 0x01, 0x00, 0x00, 0x28], "format 3"),
            ([0x05, 0x01], "no entries"),
            ([0x05, 0x01, 0x01, 0x00, 0x00], "multiple"),
            ([0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00], "Find By Type Value Request"),
            ([0x07, 0x01, 0x00, 0x08], "multiple"),
            ([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28, 0x00], "neither"),
            ([0x09, 0x01, 0x02, 0x00], "entry length 1"),
            ([0x09, 0x05, 0x02, 0x00, 0x01, 0x02], "multiple"),
            ([0x0A, 0x08], "Read Request"),
            ([0x10, 0x01, 0x00, 0xFF, 0xFF], "neither"),
            ([0x11, 0x03, 0x01, 0x00, 0x08], "entry length 3"),
            ([0x12, 0x03], "Write Request"),
            ([0x13, 0x00], "Write Response"),
            ([0x52], "Write Command"),
            ([0x1B, 0x05], "Handle Value Notification"),
            ([0x1E, 0x01], "Handle Value Confirmation"),
        ]
        for (bytes, phrase) in bad {
            do {
                let pdu = try ATTPDU(decoding: bytes)
                Issue.record("\(bytes) decoded as \(pdu)")
            } catch {
                #expect(error.code == .malformedFrame)
                #expect(error.message.contains(phrase), "\(bytes): \(error.message)")
            }
        }
    }

    @Test("random and mutated inputs never trap; whatever decodes re-encodes to the same bytes")
    func randomInputs() {
        var generator = SplitMix(seed: 0x5C4E_5817)
        var decoded = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int(generator.next() % 40)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            } else {
                // A valid PDU, truncated or with a byte flipped.
                bytes = Self.samples[Int(generator.next() % UInt64(Self.samples.count))].encoded()
                if !bytes.isEmpty {
                    if generator.next() % 2 == 0 {
                        bytes.removeLast(Int(generator.next() % UInt64(bytes.count)))
                    } else {
                        bytes[Int(generator.next() % UInt64(bytes.count))] ^= UInt8(
                            truncatingIfNeeded: generator.next() | 1
                        )
                    }
                }
            }
            if let pdu = try? ATTPDU(decoding: bytes) {
                decoded += 1
                #expect(pdu.encoded() == bytes, "\(bytes)")
            }
            var server = GATTServer(identity: Array(0..<12))
            _ = server.handle(bytes)
        }
        #expect(decoded > 1000)
    }

    @Test("the identity value carries the beacon and the listening PSM")
    func identity() throws {
        let identity = GATTIdentity(
            beacon: BLEBeacon(psm: 0x81, ephemeralID: [1, 2, 3, 4, 5, 6, 7, 8]),
            listeningPSM: 0x81
        )
        let bytes = identity.encoded()
        #expect(bytes == [0x01, 0x81, 1, 2, 3, 4, 5, 6, 7, 8, 0x81, 0x00])
        #expect(try GATTIdentity(decoding: bytes) == identity)
        #expect(throws: MeshError.self) { try GATTIdentity(decoding: Array(bytes.prefix(11))) }
    }
}

/// A small deterministic generator (SplitMix64) for reproducible random inputs.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
