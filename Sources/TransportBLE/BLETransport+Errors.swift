#if canImport(CBlueZ)
#if canImport(Glibc)
import Glibc
#endif
import MeshCore

/// Errors of the Bluetooth system calls, in words that say what to do.
extension BLETransport {
    /// One line for a failed Bluetooth system call.
    static func explain(_ error: any Error) -> String {
        guard let error = error as? SystemError else { return "\(error)" }
        switch error.errno {
        case EADDRINUSE:
            return "\(error.call): \(error.errnoName) (another process uses it; choose another transports.ble.psm)"
        case ECONNREFUSED: return "\(error.call): \(error.errnoName) (nothing listens on that PSM)"
        case ETIMEDOUT, EHOSTDOWN, EHOSTUNREACH:
            return "\(error.call): \(error.errnoName) (the device is out of range or not advertising)"
        case EACCES, EPERM: return "\(error.call): \(error.errnoName) (needs root or CAP_NET_ADMIN/CAP_NET_RAW)"
        default: return error.description
        }
    }

    /// The unavailable error for a failed mgmt socket.
    static func unavailable(_ error: SystemError) -> MeshError {
        switch error.errno {
        case EAFNOSUPPORT, EPROTONOSUPPORT:
            return MeshError(
                .transportUnavailable,
                "BLE unavailable: this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: \(error.errnoName))",
                cause: error
            )
        case EACCES, EPERM:
            return MeshError(
                .transportUnavailable,
                "BLE unavailable: not allowed to open the Bluetooth management socket (\(error.errnoName)); run as root or grant CAP_NET_ADMIN",
                cause: error
            )
        default:
            return MeshError(.transportUnavailable, "BLE unavailable: \(error)", cause: error)
        }
    }
}
#endif
