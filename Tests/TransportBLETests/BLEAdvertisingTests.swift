import MeshCore
import Testing

@testable import TransportBLE

@Suite("Advertising data, beacon and rotation")
struct BLEAdvertisingTests {
    @Test("AD structures round-trip and respect the 31-byte legacy limit")
    func adRoundTrip() throws {
        let structures = [
            BLEAdvertisingData.Structure(type: 0x01, data: [0x06]),
            BLEAdvertisingData.Structure(type: 0x09, data: Array("node".utf8)),
        ]
        let bytes = try BLEAdvertisingData.encode(structures)
        #expect(bytes == [2, 0x01, 0x06, 5, 0x09] + Array("node".utf8))
        #expect(try BLEAdvertisingData.decode(bytes) == structures)
        // Zero padding after the significant part is ignored.
        #expect(try BLEAdvertisingData.decode(bytes + [0, 0, 0]) == structures)
        #expect(throws: MeshError.self) {
            try BLEAdvertisingData.encode([.init(type: 0xFF, data: [UInt8](repeating: 1, count: 30))])
        }
    }

    @Test(
        "a structure running past the end is malformed",
        arguments: [[3, 0x01, 0x06], [2], [0x1F, 0x09, 0x41]] as [[UInt8]]
    )
    func truncatedStructure(bytes: [UInt8]) {
        do {
            _ = try BLEAdvertisingData.decode(bytes)
            Issue.record("decoded truncated data")
        } catch {
            #expect(error.code == .malformedFrame)
        }
    }

    @Test("the mesh advertisement: UUID in the advertising data, beacon in the scan response, both fit")
    func meshAdvertisement() throws {
        let advertising = BLEMeshAdvertisement.advertisingData(includeFlags: true)
        #expect(advertising.count == 21)
        // The UUID travels little-endian: 9E CA DC 24 ... 01 00 40 6E.
        #expect(Array(advertising[3..<5]) == [17, 0x07])
        #expect(Array(advertising[5..<9]) == [0x9E, 0xCA, 0xDC, 0x24])
        #expect(Array(advertising.suffix(4)) == [0x01, 0x00, 0x40, 0x6E])
        let beacon = BLEBeacon(psm: 0x0081, ephemeralID: [1, 2, 3, 4, 5, 6, 7, 8])
        let response = BLEMeshAdvertisement.scanResponse(beacon: beacon)
        #expect(response.count <= BLEAdvertisingData.legacyMaximum)
        #expect(response.count == 2 + 16 + BLEBeacon.encodedLength)

        // What the kernel reports: advertising data and scan response concatenated.
        let sighting = try #require(BLEMeshAdvertisement.parse(advertising + response))
        #expect(sighting.advertisesService)
        #expect(sighting.beacon == beacon)
        let uuidOnly = try #require(BLEMeshAdvertisement.parse(advertising))
        #expect(uuidOnly.beacon == nil)
    }

    @Test("other advertisers are not mesh nodes")
    func foreignAdvertisement() throws {
        let heartRate = try BLEAdvertisingData.encode([.init(type: 0x03, data: [0x0D, 0x18])])
        #expect(BLEMeshAdvertisement.parse(heartRate) == nil)
        var otherUUID = BLEMeshAdvertisement.advertisingData()
        otherUUID[otherUUID.count - 1] ^= 0xFF
        #expect(BLEMeshAdvertisement.parse(otherUUID) == nil)
        #expect(BLEMeshAdvertisement.parse([0x05, 0x09]) == nil)
    }

    @Test("beacon encode/decode, and bad beacons are rejected")
    func beaconCoding() throws {
        let beacon = BLEBeacon(psm: 0x00C3, ephemeralID: [9, 8, 7, 6, 5, 4, 3, 2])
        let bytes = beacon.encoded()
        #expect(bytes == [1, 0xC3, 9, 8, 7, 6, 5, 4, 3, 2])
        #expect(try BLEBeacon(decoding: bytes) == beacon)
        #expect(try BLEBeacon(decoding: bytes + [0xEE]) == beacon)
        #expect(throws: MeshError.self) { try BLEBeacon(decoding: Array(bytes.prefix(9))) }
        #expect(throws: MeshError.self) { try BLEBeacon(decoding: [2] + bytes.dropFirst()) }
        #expect(throws: MeshError.self) { try BLEBeacon(decoding: [1, 0x41] + bytes.dropFirst(2)) }
    }

    /// A deterministic stand-in for the node's hash (tests only; the node injects
    /// MeshCrypto's): spreads every input byte over 8 output bytes.
    static let testHash: BLEBeaconSchedule.Hash = { input in
        var state: [UInt8] = [0x6A, 0x09, 0xE6, 0x67, 0xBB, 0x67, 0xAE, 0x85]
        for (index, byte) in input.enumerated() {
            state[index % 8] = (state[index % 8] &* 31) ^ byte
            state[(index + 3) % 8] &+= state[index % 8] &* 17
        }
        return state
    }

    @Test("the identifier rotates per window, is stable within one, and known peers are recognised")
    func rotationAndRecognition() throws {
        let alice = PeerID.random()
        let bob = PeerID.random()
        let schedule = try BLEBeaconSchedule(localPeerID: alice, rotationSeconds: 900, hash: Self.testHash)
        let t0: UInt64 = 1_800_000_000 - 1_800_000_000 % 900
        #expect(schedule.localID(at: t0) == schedule.localID(at: t0 + 899))
        #expect(schedule.localID(at: t0) != schedule.localID(at: t0 + 900))
        #expect(schedule.secondsUntilRotation(at: t0 + 100) == 800)
        #expect(schedule.localID(at: t0).count == BLEBeacon.identifierLength)

        // Bob's transport, knowing Alice's ID, recognises her beacon, also one window off.
        let observer = try BLEBeaconSchedule(localPeerID: bob, rotationSeconds: 900, hash: Self.testHash)
        let seen = schedule.beacon(psm: 0x81, at: t0 + 10).ephemeralID
        #expect(observer.recognise(seen, among: [bob, alice], at: t0 + 20) == alice)
        #expect(observer.recognise(seen, among: [alice], at: t0 + 900 + 5) == alice)
        #expect(observer.recognise(seen, among: [bob], at: t0 + 20) == nil)
        #expect(observer.recognise(seen, among: [alice], at: t0 + 5 * 900) == nil)
    }

    @Test("without a hash the identifier is random per window and recognisable by nobody")
    func randomIdentifiers() throws {
        let alice = PeerID.random()
        let schedule = try BLEBeaconSchedule(localPeerID: alice, rotationSeconds: 60, hash: nil)
        #expect(!schedule.isRecognisable)
        let first = schedule.localID(at: 6000)
        #expect(schedule.localID(at: 6059) == first)
        #expect(schedule.localID(at: 6060) != first)
        #expect(schedule.recognise(first, among: [alice], at: 6000) == nil)
        #expect(throws: MeshError.self) {
            try BLEBeaconSchedule(localPeerID: alice, rotationSeconds: 60, hash: { _ in [1, 2] })
        }
    }

    @Test("sightings are reported once per dedup window per address and beacon")
    func deduplication() {
        var tracker = SightingTracker(window: .seconds(5), lostAfter: .seconds(30))
        let t0 = ContinuousClock.now
        let a = PeerHint(transport: "ble", address: "00:AA:01:00:00:00/public/0x0081", metadata: ["ephemeral_id": "01"])
        let aRotated = PeerHint(transport: "ble", address: a.address, metadata: ["ephemeral_id": "02"])
        let b = PeerHint(transport: "ble", address: "00:AA:01:01:00:01/public/0x0081", metadata: ["ephemeral_id": "01"])
        let results = [
            tracker.sighted(a, at: t0),
            tracker.sighted(a, at: t0 + .seconds(4)),
            tracker.sighted(b, at: t0 + .seconds(4)),
            tracker.sighted(aRotated, at: t0 + .seconds(4)),
            tracker.sighted(a, at: t0 + .seconds(5)),
            tracker.sighted(a, at: t0 + .seconds(9)),
        ]
        #expect(results == [true, false, true, true, true, false])
    }

    @Test("an advertiser not seen for lostAfter is reported lost once")
    func lostAdvertisers() {
        var tracker = SightingTracker(window: .seconds(5), lostAfter: .seconds(30))
        let t0 = ContinuousClock.now
        let a = PeerHint(transport: "ble", address: "00:AA:01:00:00:00/public/0x0081")
        let b = PeerHint(transport: "ble", address: "00:AA:01:01:00:01/public/0x0081")
        _ = tracker.sighted(a, at: t0)
        _ = tracker.sighted(b, at: t0)
        _ = tracker.sighted(b, at: t0 + .seconds(20))
        let at29 = tracker.lost(at: t0 + .seconds(29))
        let at30 = tracker.lost(at: t0 + .seconds(30))
        let at31 = tracker.lost(at: t0 + .seconds(31))
        let at50 = tracker.lost(at: t0 + .seconds(50))
        #expect(at29.isEmpty)
        #expect(at30 == [a])
        #expect(at31.isEmpty)
        #expect(at50 == [b])
        // Seen again after being lost: reported again at once.
        let again = tracker.sighted(a, at: t0 + .seconds(51))
        #expect(again)
    }
}

@Suite("mgmt Device Found events")
struct MgmtDeviceFoundTests {
    /// A Device Found event as the kernel sends it for an SCMesh node at 00:AA:01:00:00:00.
    static func event(type: UInt8 = 1, eir: [UInt8]) -> [UInt8] {
        [0x00, 0x00, 0x00, 0x01, 0xAA, 0x00, type, 0xC4, 0, 0, 0, 0, UInt8(eir.count), 0] + eir
    }

    @Test("an SCMesh node's event parses to its address, RSSI and beacon")
    func meshNode() throws {
        let beacon = BLEBeacon(psm: 0x83, ephemeralID: [8, 7, 6, 5, 4, 3, 2, 1])
        let eir =
            BLEMeshAdvertisement.advertisingData(includeFlags: true) + BLEMeshAdvertisement.scanResponse(beacon: beacon)
        let found = try #require(MgmtDeviceFound(parameters: Self.event(eir: eir)))
        #expect(found.address == [0x00, 0xAA, 0x01, 0x00, 0x00, 0x00])
        #expect(found.type == .public)
        #expect(found.rssi == -60)
        let sighting = try #require(BLEMeshAdvertisement.parse(found.eir))
        #expect(sighting.beacon == beacon)
        let address = try BLEPeerAddress(bytes: found.address, type: found.type, psm: beacon.psm)
        #expect(address.description == "00:AA:01:00:00:00/public/0x0083")
    }

    @Test("short, overrunning and BR/EDR events are ignored")
    func rejected() {
        #expect(MgmtDeviceFound(parameters: Array(Self.event(eir: []).prefix(13))) == nil)
        var overrun = Self.event(eir: [2, 1, 6])
        overrun[12] = 9
        #expect(MgmtDeviceFound(parameters: overrun) == nil)
        #expect(MgmtDeviceFound(parameters: Self.event(type: 0, eir: [2, 1, 6])) == nil)
        #expect(MgmtDeviceFound(parameters: Self.event(type: 2, eir: [2, 1, 6]))?.type == .random)
    }
}
