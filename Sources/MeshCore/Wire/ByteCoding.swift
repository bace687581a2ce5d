/// Appends big-endian integers and bytes to an array.
package struct ByteWriter {
    package var bytes: [UInt8]

    package init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    package mutating func write(_ value: UInt8) { bytes.append(value) }

    package mutating func write<T: FixedWidthInteger & UnsignedInteger>(_ value: T) {
        var big = value.bigEndian
        withUnsafeBytes(of: &big) { bytes.append(contentsOf: $0) }
    }

    package mutating func write(contentsOf data: some Collection<UInt8>) { bytes.append(contentsOf: data) }
}

/// Reads big-endian integers and bytes from an array, throwing `.malformedFrame`
/// (never trapping) when the input is short.
package struct ByteReader {
    package let bytes: [UInt8]
    package private(set) var offset: Int
    private let context: String

    package init(_ bytes: [UInt8], context: String) {
        self.bytes = bytes
        self.offset = 0
        self.context = context
    }

    package var remaining: Int { bytes.count - offset }

    package mutating func readInteger<T: FixedWidthInteger & UnsignedInteger>(
        _: T.Type = T.self,
        field: String
    ) throws(MeshError) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else {
            throw MeshError(
                .malformedFrame,
                "\(context): truncated at \(field) (needs \(size) bytes, \(remaining) left)"
            )
        }
        var value: T = 0
        for index in offset..<(offset + size) {
            value = value << 8 | T(bytes[index])
        }
        offset += size
        return value
    }

    package mutating func readBytes(_ count: Int, field: String) throws(MeshError) -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else {
            throw MeshError(
                .malformedFrame,
                "\(context): truncated at \(field) (needs \(count) bytes, \(remaining) left)"
            )
        }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    package mutating func readRest() -> ArraySlice<UInt8> {
        defer { offset = bytes.count }
        return bytes[offset...]
    }
}
