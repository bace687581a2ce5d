import Logging
import MeshCore
import Synchronization
import Testing

@testable import TransportBLE

#if canImport(Glibc)
import Glibc
#endif

/// Whether this kernel lacks Bluetooth (`socket(AF_BLUETOOTH)` → `EAFNOSUPPORT`), as on
/// the project's build machines.
let kernelLacksBluetooth: Bool = {
    let fd = socket(31, Int32(SOCK_RAW.rawValue), 1)  // AF_BLUETOOTH, BTPROTO_HCI
    if fd >= 0 {
        close(fd)
        return false
    }
    return errno == EAFNOSUPPORT
}()

@Suite("BLETransport on this machine")
struct BLETransportTests {
    func context() -> TransportContext {
        TransportContext(localPeerID: .random(), logger: Logger(label: "ble-test")) { _ in }
    }

    @Test("capabilities: small MTU, low bitrate, reliable, needs discovery, high power cost")
    func capabilities() {
        let transport = BLETransport()
        #expect(transport.name == "ble")
        let capabilities = transport.capabilities
        #expect(capabilities.maxFrameSize <= 1024)
        #expect(capabilities.nominalBitrate <= 1_000_000)
        #expect(capabilities.isReliable)
        #expect(capabilities.needsDiscovery)
        #expect(capabilities.powerCost >= 5)
    }

    @Test(
        "no Bluetooth in the kernel: listen throws transportUnavailable in one clear line",
        .enabled(if: kernelLacksBluetooth)
    )
    func unavailableWithoutKernelSupport() async throws {
        let transport = BLETransport()
        let reported = Mutex(0)
        let context = TransportContext(localPeerID: .random(), logger: Logger(label: "ble-test")) { _ in
            reported.withLock { $0 += 1 }
        }
        do {
            try await transport.listen(context: context)
            Issue.record("listen returned on a kernel without Bluetooth")
        } catch let error as MeshError {
            #expect(error.code == .transportUnavailable)
            #if canImport(CBlueZ)
            #expect(
                error.message
                    == "BLE unavailable: this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT)"
            )
            #else
            #expect(error.message == "BLE unavailable: SCMesh was built without the BLE trait (needs libbluetooth-dev)")
            #endif
            #expect(!error.message.contains("\n"))
        }
        // Nothing was reported, and the transport is not running.
        #expect(reported.withLock { $0 } == 0)
        await #expect(throws: MeshError.self) {
            _ = try await transport.dial(PeerHint(transport: "ble", address: "00:AA:01:00:00:00/public/0x0081"))
        }
        await #expect(throws: MeshError.self) { try await transport.listen(context: context) }
    }

    @Test("a bad configuration fails listen before touching the kernel")
    func invalidConfigurationFirst() async {
        var configuration = BLETransport.Configuration()
        configuration.psm = 0x1001
        let transport = BLETransport(configuration: configuration)
        do {
            try await transport.listen(context: context())
            Issue.record("listen accepted PSM 0x1001")
        } catch let error as MeshError {
            #expect(error.code == .invalidConfiguration)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("dial before listen, or to another transport's hint, fails clearly")
    func dialErrors() async {
        let transport = BLETransport()
        await #expect(throws: MeshError.self) {
            _ = try await transport.dial(PeerHint(transport: "ble", address: "00:AA:01:00:00:00/public/0x0081"))
        }
        do {
            _ = try await transport.dial(PeerHint(transport: "tcp", address: "127.0.0.1:7420"))
        } catch let error as MeshError {
            #expect(error.code == .invalidArgument)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
