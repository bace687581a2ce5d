import CSodium

/// Secret key material in its own allocation, wiped with `sodium_memzero` when the
/// last reference goes. Immutable after `init`.
///
/// `@unchecked Sendable`: the bytes are written only inside `init` (before the
/// object is shared) and only read afterwards, so concurrent readers are safe.
package final class SecretBytes: @unchecked Sendable {
    /// The number of bytes.
    package let count: Int
    private let pointer: UnsafeMutablePointer<UInt8>

    /// Allocates `count` zero bytes and lets `fill` write them.
    package init(count: Int, fill: (UnsafeMutablePointer<UInt8>) throws -> Void = { _ in }) rethrows {
        self.count = count
        pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: max(count, 1))
        pointer.initialize(repeating: 0, count: max(count, 1))
        do {
            try fill(pointer)
        } catch {
            sodium_memzero(pointer, count)
            pointer.deallocate()
            throw error
        }
    }

    /// Copies the bytes (the caller should wipe its array when done).
    package convenience init(_ bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        self.init(count: array.count) { out in
            array.withUnsafeBufferPointer { source in
                if let base = source.baseAddress { out.update(from: base, count: array.count) }
            }
        }
    }

    deinit {
        sodium_memzero(pointer, count)
        pointer.deallocate()
    }

    /// Reads the bytes in place.
    package func withUnsafePointer<T>(_ body: (UnsafePointer<UInt8>) throws -> T) rethrows -> T {
        try body(UnsafePointer(pointer))
    }

    /// A copy of the bytes as an array (for hashing into handshake state).
    package var bytes: [UInt8] { Array(UnsafeBufferPointer(start: pointer, count: count)) }

    /// The first `prefix` bytes as new secret bytes.
    package func prefix(_ length: Int) -> SecretBytes {
        SecretBytes(count: Swift.min(length, count)) { out in out.update(from: pointer, count: Swift.min(length, count))
        }
    }
}
