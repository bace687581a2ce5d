#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One fuzz input's handler, libFuzzer's `LLVMFuzzerTestOneInput` shape. Returns 0.
public typealias FuzzBody = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ body: FuzzBody
) -> CInt
#endif

/// The fuzz target's `main`. Built with `-DFUZZING` and the fuzzer instrumentation
/// (what `scripts/fuzz.sh` does), it hands the command line to libFuzzer's driver
/// (`-max_total_time=`, corpus directories, ...). Built without, it runs every file
/// named on the command line (or inside a directory named there) through `body`
/// once: a plain regression run of a corpus.
public func fuzzMain(_ body: FuzzBody) -> Never {
    #if FUZZING
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, body))
    #else
    var count = 0
    for path in CommandLine.arguments.dropFirst() {
        for file in files(at: path) {
            let bytes = read(file)
            _ = bytes.withUnsafeBufferPointer { body($0.baseAddress, $0.count) }
            count += 1
        }
    }
    print("ran \(count) inputs")
    exit(0)
    #endif
}

/// The input as an array.
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// Stops the fuzzer with a finding when `condition` is false (a trap counts as a crash).
public func fuzzCheck(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition {
        let line = Array("fuzz check failed: \(message())\n".utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        abort()
    }
}

private func files(at path: String) -> [String] {
    guard let directory = opendir(path) else { return [path] }
    defer { closedir(directory) }
    var result: [String] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) {
            String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        if name != ".", name != ".." { result.append(path + "/" + name) }
    }
    return result.sorted()
}

private func read(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else { return [] }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = fread(&chunk, 1, chunk.count, file)
        if count <= 0 { break }
        bytes += chunk[0..<count]
    }
    return bytes
}
