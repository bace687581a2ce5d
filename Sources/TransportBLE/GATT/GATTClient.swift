import MeshCore

/// What a GATT client found on a remote server running the seed profile.
package struct GATTRemoteProfile: Hashable, Sendable {
    /// The service's handle range.
    package var serviceStart: UInt16
    /// The service's last handle.
    package var serviceEnd: UInt16
    /// TX's value handle (written with Write Request).
    package var txHandle: UInt16
    /// RX's value handle (notified).
    package var rxHandle: UInt16
    /// RX's CCCD handle.
    package var rxCCCDHandle: UInt16
    /// The identity value handle, when the server has one.
    package var identityHandle: UInt16?
    /// The agreed ATT MTU.
    package var mtu: Int
}

/// The GATT client procedures on a ``GATTConnection`` (Core Vol 3 Part G §4).
extension GATTConnection {
    /// Exchanges the MTU, discovers the seed service by UUID, its characteristics and
    /// RX's CCCD, and enables RX notifications.
    /// - Throws: `.linkClosed` when the bearer ends, `.dialFailed` when the remote does
    ///   not have the service or refuses a step (with the ATT error).
    package func setUpClient(requestedMTU: Int = ATTPDU.maximumMTU) async throws -> GATTRemoteProfile {
        let mtu = try await exchangeMTU(requestedMTU)
        let (start, end) = try await discoverService(GATTProfile.service)
        let characteristics = try await discoverCharacteristics(start: start, end: end)
        guard let tx = characteristics.first(where: { $0.uuid == GATTProfile.tx }) else {
            throw failure("the SCMesh service has no TX characteristic (\(GATTProfile.tx))")
        }
        guard tx.properties & GATTProfile.Property.write != 0 else {
            throw failure("TX does not accept write requests")
        }
        guard let rxIndex = characteristics.firstIndex(where: { $0.uuid == GATTProfile.rx }) else {
            throw failure("the SCMesh service has no RX characteristic (\(GATTProfile.rx))")
        }
        let rx = characteristics[rxIndex]
        let descriptorsEnd =
            rxIndex + 1 < characteristics.count ? characteristics[rxIndex + 1].declarationHandle - 1 : end
        guard
            let cccd = try await findDescriptor(
                .clientCharacteristicConfiguration,
                start: rx.valueHandle + 1,
                end: descriptorsEnd
            )
        else {
            throw failure("RX has no client characteristic configuration descriptor")
        }
        setRemoteRX(rx.valueHandle, cccd: cccd)
        try await write(handle: cccd, value: [0x01, 0x00])
        return GATTRemoteProfile(
            serviceStart: start,
            serviceEnd: end,
            txHandle: tx.valueHandle,
            rxHandle: rx.valueHandle,
            rxCCCDHandle: cccd,
            identityHandle: characteristics.first(where: { $0.uuid == GATTProfile.identity })?.valueHandle,
            mtu: mtu
        )
    }

    /// Exchange MTU: asks for `requested` (clamped to 23–517); returns the agreed MTU.
    package func exchangeMTU(_ requested: Int) async throws -> Int {
        let asked = UInt16(max(ATTPDU.minimumMTU, min(requested, ATTPDU.maximumMTU)))
        let response = try await request(.exchangeMTURequest(clientMTU: asked))
        let agreed: Int
        switch response {
        case .exchangeMTUResponse(let serverMTU):
            agreed = max(ATTPDU.minimumMTU, min(Int(serverMTU), Int(asked)))
        case .errorResponse(_, _, .requestNotSupported):
            agreed = ATTPDU.minimumMTU
        default:
            throw unexpected(response, for: "Exchange MTU Request")
        }
        setAgreedMTU(agreed)
        return agreed
    }

    /// Primary service discovery by UUID (Find By Type Value); the first match's range.
    package func discoverService(_ uuid: ATTUUID) async throws -> (UInt16, UInt16) {
        let response = try await request(
            .findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800, value: uuid.bytes)
        )
        switch response {
        case .findByTypeValueResponse(let ranges):
            guard let first = ranges.first, first.handle != 0, first.handle <= first.groupEnd else {
                throw failure("the remote answered service discovery with an empty or inverted range")
            }
            return (first.handle, first.groupEnd)
        case .errorResponse(_, _, .attributeNotFound):
            throw failure("the remote has no SCMesh service (\(uuid))")
        default:
            throw unexpected(response, for: "Find By Type Value Request")
        }
    }

    /// A characteristic declaration.
    package struct Characteristic: Hashable, Sendable {
        /// The declaration's handle.
        package var declarationHandle: UInt16
        /// Its properties.
        package var properties: UInt8
        /// The value handle.
        package var valueHandle: UInt16
        /// Its UUID.
        package var uuid: ATTUUID
    }

    /// All characteristics in a handle range (Read By Type of `0x2803`, repeated).
    package func discoverCharacteristics(start: UInt16, end: UInt16) async throws -> [Characteristic] {
        var found: [Characteristic] = []
        var next = start
        while next <= end {
            let response = try await request(.readByTypeRequest(start: next, end: end, type: .characteristic))
            switch response {
            case .readByTypeResponse(let entries):
                var last = next
                for entry in entries {
                    guard entry.value.count == 5 || entry.value.count == 19, entry.handle >= next, entry.handle <= end,
                        let uuid = ATTUUID(wire: entry.value[3...])
                    else { throw failure("a malformed characteristic declaration at handle \(entry.handle)") }
                    found.append(
                        Characteristic(
                            declarationHandle: entry.handle,
                            properties: entry.value[0],
                            valueHandle: entry.value.attLE16(at: 1),
                            uuid: uuid
                        )
                    )
                    last = max(last, entry.handle)
                }
                guard last < end else { return found }
                next = last + 1
            case .errorResponse(_, _, .attributeNotFound):
                return found
            default:
                throw unexpected(response, for: "Read By Type Request")
            }
        }
        return found
    }

    /// The first descriptor of `type` in a range (Find Information, repeated).
    package func findDescriptor(_ type: ATTUUID, start: UInt16, end: UInt16) async throws -> UInt16? {
        var next = start
        while next <= end, next != 0 {
            let response = try await request(.findInformationRequest(start: next, end: end))
            switch response {
            case .findInformationResponse(let entries):
                if let match = entries.first(where: { $0.uuid == type }) { return match.handle }
                guard let last = entries.map(\.handle).max(), last >= next, last < end else { return nil }
                next = last + 1
            case .errorResponse(_, _, .attributeNotFound):
                return nil
            default:
                throw unexpected(response, for: "Find Information Request")
            }
        }
        return nil
    }

    /// Write Request; returns once the Write Response came.
    package func write(handle: UInt16, value: [UInt8]) async throws {
        let response = try await request(.writeRequest(handle: handle, value: value))
        guard case .writeResponse = response else {
            throw unexpected(response, for: "Write Request to handle \(handle)")
        }
    }

    /// Read Request.
    package func read(handle: UInt16) async throws -> [UInt8] {
        let response = try await request(.readRequest(handle: handle))
        guard case .readResponse(let value) = response else {
            throw unexpected(response, for: "Read Request of handle \(handle)")
        }
        return value
    }

    private func failure(_ text: String) -> MeshError {
        MeshError(.dialFailed, "GATT set-up with \(bearer.remoteAddress) failed: \(text)")
    }

    private func unexpected(_ response: ATTPDU, for request: String) -> MeshError {
        if case .errorResponse(_, let handle, let error) = response {
            return failure("\(request) refused: \(error) at handle \(handle)")
        }
        return failure("\(request) answered with \(ATTPDU.name(of: response.opcode))")
    }
}
