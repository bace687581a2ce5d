import Foundation
import MeshCore
import MeshNode
import NIOCore

/// Bytes and rate of a long transfer on standard error, for a person watching a
/// terminal: one line rewritten in place (`\r`), at most every 100 ms, only when
/// standard error is a terminal and the payload is at least ``threshold`` bytes.
/// Prints nothing when standard error is a pipe or a file.
struct TransferProgress {
    /// Payloads smaller than this show no progress.
    static let threshold = 1 << 20

    let enabled: Bool
    let started = ContinuousClock.now
    private var lastDrawn: ContinuousClock.Instant?

    /// A meter that draws when standard error is a terminal.
    init(enabled: Bool = isatty(STDERR_FILENO) == 1) {
        self.enabled = enabled
    }

    /// Redraws `read 3.2 MiB (41.0 MiB/s)` when 100 ms passed since the last draw.
    mutating func update(_ bytes: Int, _ verb: String) {
        guard enabled, bytes >= Self.threshold else { return }
        let now = ContinuousClock.now
        if let lastDrawn, now - lastDrawn < .milliseconds(100) { return }
        lastDrawn = now
        draw("\(verb) \(Self.size(bytes)) (\(Self.rate(bytes, since: started)))")
    }

    /// Ends the meter: a last line `read 10.0 MiB in 0.65 s (15.4 MiB/s)` then
    /// `suffix` and a newline, for a payload of at least ``threshold`` bytes.
    mutating func finish(_ bytes: Int, _ verb: String, suffix: String = "") {
        guard enabled, bytes >= Self.threshold else { return }
        let elapsed = Self.seconds(ContinuousClock.now - started)
        draw(
            "\(verb) \(Self.size(bytes)) in \(String(format: "%.2f", elapsed)) s (\(Self.rate(bytes, since: started)))\(suffix)"
        )
        FileHandle.standardError.write(Data("\n".utf8))
    }

    private func draw(_ text: String) {
        // \r, the text, then erase to the end of the line.
        FileHandle.standardError.write(Data("\r\(text)\u{1B}[K".utf8))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// `512 KiB`, `3.2 MiB`, `1.1 GiB`.
    static func size(_ bytes: Int) -> String {
        let value = Double(bytes)
        if value >= Double(1 << 30) { return String(format: "%.1f GiB", value / Double(1 << 30)) }
        if value >= Double(1 << 20) { return String(format: "%.1f MiB", value / Double(1 << 20)) }
        return String(format: "%.0f KiB", value / 1024)
    }

    static func rate(_ bytes: Int, since start: ContinuousClock.Instant) -> String {
        let elapsed = max(seconds(ContinuousClock.now - start), 0.001)
        return size(Int(Double(bytes) / elapsed)) + "/s"
    }
}

/// Reads all of standard input straight into one buffer (sized up front when standard
/// input is a regular file), showing progress on a terminal. The buffer is what the
/// HTTP client sends, so the payload is not copied again on its way to the node.
///
/// With a `limit` (the node's `max_message_size`) reading stops as soon as the input
/// passes it, so an endless or huge pipe is refused at once instead of read whole.
/// - Throws: ``MeshError`` `.messageTooLarge` naming the limit when standard input
///   holds more than `limit` bytes; `.invalidArgument` naming the error when standard
///   input cannot be read.
func readStandardInput(progress: inout TransferProgress, limit: InputLimit? = nil) throws -> ByteBuffer {
    var info = stat()
    let declared = fstat(STDIN_FILENO, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int(info.st_size) : 0
    if let limit, declared > limit.bytes {
        throw MeshError(
            .messageTooLarge,
            "standard input holds \(declared) bytes, more than \(limit.name) of \(limit.bytes) bytes: nothing was read or queued; \(limit.advice)"
        )
    }
    var buffer = ByteBufferAllocator().buffer(capacity: max(declared + 1, 1 << 20))
    while true {
        let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 1 << 20) { target in
            while true {
                let count = read(STDIN_FILENO, target.baseAddress, target.count)
                if count >= 0 || errno != EINTR { return count }
            }
        }
        if count < 0 {
            throw MeshError(
                .invalidArgument,
                "cannot read standard input: \(String(cString: strerror(errno)).lowercased())"
            )
        }
        if count == 0 { break }
        if let limit, buffer.readableBytes > limit.bytes {
            throw MeshError(
                .messageTooLarge,
                "standard input holds more than \(limit.name) of \(limit.bytes) bytes: reading stopped there and nothing was queued; \(limit.advice)"
            )
        }
        progress.update(buffer.readableBytes, "read")
    }
    return buffer
}

/// The most a payload from standard input may hold, for ``readStandardInput(progress:limit:)``.
struct InputLimit {
    /// The limit in bytes.
    var bytes: Int
    /// What sets it, as the refusal names it (`the node's max_message_size`).
    var name: String
    /// What to do instead, as the refusal ends.
    var advice: String

    /// A message's: the node's `max_message_size`.
    static func message(_ bytes: Int) -> InputLimit {
        InputLimit(bytes: bytes, name: "the node's max_message_size", advice: "raise max_message_size to send more")
    }

    /// A topic message's (an emergency broadcast is one): the topic frame's payload limit.
    static let topicMessage = InputLimit(
        bytes: TopicMessageFrame.maxPayload,
        name: "a topic message's limit",
        advice: "send it to one peer with scmesh send, which takes up to max_message_size"
    )
}
