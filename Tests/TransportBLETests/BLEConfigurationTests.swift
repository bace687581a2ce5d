import Foundation
import MeshCore
import Testing

@testable import TransportBLE

@Suite("Configuration and addresses")
struct BLEConfigurationTests {
    @Test("defaults are valid and match the documentation")
    func defaults() throws {
        let configuration = BLETransport.Configuration()
        try configuration.validate()
        #expect(configuration.adapter == "hci0")
        #expect(configuration.psm == 0x0081)
        #expect(configuration.securityLevel == .low)
        #expect(configuration.beaconRotationSeconds == 900)
        #expect(configuration.dedupWindowSeconds == 5)
        #expect(configuration.gatt)
        #expect(configuration.dataPath == .auto)
    }

    @Test("gatt and data_path decode; an unknown path and GATT-only without GATT are refused naming the key")
    func dataPath() throws {
        let json = #"{"gatt":true,"data_path":"gatt"}"#
        let configuration = try JSONDecoder().decode(BLETransport.Configuration.self, from: Data(json.utf8))
        #expect(configuration.gatt && configuration.dataPath == .gatt)
        try configuration.validate()
        do {
            _ = try JSONDecoder().decode(BLETransport.Configuration.self, from: Data(#"{"data_path":"wifi"}"#.utf8))
            Issue.record("data_path wifi accepted")
        } catch {
            #expect("\(error)".contains("data_path: expected one of auto, l2cap, gatt"), "\(error)")
        }
        var off = BLETransport.Configuration()
        off.gatt = false
        off.dataPath = .gatt
        #expect(throws: MeshError.self) { try off.validate() }
        do { try off.validate() } catch {
            #expect(error.message.hasPrefix("transports.ble.data_path:"), "\(error.message)")
        }
        #expect(BLETransport.Configuration.DataPath.auto.dialOrder(gattEnabled: true) == [.l2cap, .gatt])
        #expect(BLETransport.Configuration.DataPath.auto.dialOrder(gattEnabled: false) == [.l2cap])
        #expect(BLETransport.Configuration.DataPath.l2cap.dialOrder(gattEnabled: true) == [.l2cap])
        #expect(BLETransport.Configuration.DataPath.gatt.dialOrder(gattEnabled: true) == [.gatt])
    }

    @Test("gatt_first dials GATT then L2CAP and moves links; move_to_l2cap_after_seconds decodes and is bounded")
    func gattFirst() throws {
        let json = #"{"data_path":"gatt_first","move_to_l2cap_after_seconds":0.5}"#
        let configuration = try JSONDecoder().decode(BLETransport.Configuration.self, from: Data(json.utf8))
        #expect(configuration.dataPath == .gattFirst && configuration.moveToL2CAPAfterSeconds == 0.5)
        try configuration.validate()
        #expect(BLETransport.Configuration().moveToL2CAPAfterSeconds == 5)
        #expect(BLETransport.Configuration.DataPath.gattFirst.dialOrder(gattEnabled: true) == [.gatt, .l2cap])
        #expect(BLETransport.Configuration.DataPath.gattFirst.dialOrder(gattEnabled: false) == [.l2cap])
        #expect(BLETransport.Configuration.DataPath.allCases.filter(\.movesToL2CAP) == [.auto, .gattFirst])
        for bad in [-1, 3601, Double.nan] {
            var configuration = BLETransport.Configuration()
            configuration.moveToL2CAPAfterSeconds = bad
            do {
                try configuration.validate()
                Issue.record("move_to_l2cap_after_seconds \(bad) accepted")
            } catch {
                #expect(error.message.hasPrefix("transports.ble.move_to_l2cap_after_seconds:"), "\(error.message)")
            }
        }
    }

    @Test("snake_case keys decode; missing keys keep defaults; the PSM may be a hex string")
    func decoding() throws {
        let json = #"{"adapter":"hci1","psm":"0x00C1","security_level":"medium","scan_interval_ms":200,"tx_power":-4}"#
        let configuration = try JSONDecoder().decode(BLETransport.Configuration.self, from: Data(json.utf8))
        #expect(configuration.adapter == "hci1")
        #expect(configuration.psm == 0xC1)
        #expect(configuration.securityLevel == .medium)
        #expect(configuration.scanIntervalMs == 200)
        #expect(configuration.txPower == -4)
        #expect(configuration.scanWindowMs == 30)
        let encoded = try JSONEncoder().encode(configuration)
        #expect(String(decoding: encoded, as: UTF8.self).contains("\"security_level\":\"medium\""))
        #expect(try JSONDecoder().decode(BLETransport.Configuration.self, from: encoded) == configuration)
    }

    @Test(
        "validate names the bad key",
        arguments: [
            "psm", "psm-low", "adapter", "advertising_interval_ms", "tx_power", "scan_interval_ms", "scan_window_ms",
            "beacon_rotation_seconds", "dedup_window_seconds",
        ]
    )
    func validation(case name: String) {
        var configuration = BLETransport.Configuration()
        switch name {
        case "psm": configuration.psm = 0x1001
        case "psm-low": configuration.psm = 0x0040
        case "adapter": configuration.adapter = "wlan0"
        case "advertising_interval_ms": configuration.advertisingIntervalMs = 5
        case "tx_power": configuration.txPower = 40
        case "scan_interval_ms": configuration.scanIntervalMs = 0
        case "scan_window_ms": configuration.scanWindowMs = 500
        case "beacon_rotation_seconds": configuration.beaconRotationSeconds = 1
        default: configuration.dedupWindowSeconds = -1
        }
        let key = name == "psm-low" ? "psm" : name
        do {
            try configuration.validate()
            Issue.record("\(key) accepted a bad value")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.hasPrefix("transports.ble.\(key):"), "\(error.message)")
        }
    }

    @Test("the seed app's BR/EDR PSM is refused with an explanation")
    func seedPSM() {
        var configuration = BLETransport.Configuration()
        configuration.psm = 0x1001
        #expect(throws: MeshError.self) { try configuration.validate() }
        do { try configuration.validate() } catch { #expect(error.message.contains("BR/EDR")) }
    }

    @Test("addresses parse and print as hint addresses")
    func addresses() throws {
        let address = try BLEPeerAddress(parsing: "00:aa:01:00:00:0f/random/0x00c1")
        #expect(address.bytes == [0x00, 0xAA, 0x01, 0x00, 0x00, 0x0F])
        #expect(address.type == .random)
        #expect(address.psm == 0xC1)
        #expect(address.description == "00:AA:01:00:00:0F/random/0x00c1")
        #expect(try BLEPeerAddress(parsing: address.description) == address)
        let bare = try BLEPeerAddress(parsing: "00:AA:01:00:00:00")
        #expect(bare.type == .public)
        #expect(bare.psm == 0x81)
        for bad in [
            "", "00:AA:01:00:00", "00:AA:01:00:00:0G/public", "00:AA:01:00:00:00/other",
            "00:AA:01:00:00:00/public/0x1001", "a/b/c/d",
        ] {
            #expect(throws: MeshError.self, "\(bad)") { try BLEPeerAddress(parsing: bad) }
        }
    }
}
