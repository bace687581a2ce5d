import Foundation
import Glibc
import TestSupport
import Testing

@testable import MeshNodeHTTP

// A save killed midway (`kill -9`) leaves its temporary `.<id>.<pid>-<random>.part` file;
// the next save into the directory removes it, and nothing else: not the file of a save
// still running, not a file of another shape.

@Suite("inbox --save: leftovers of a killed save")
struct InboxSaverStalePartsTests {
    static let id = String(repeating: "ab", count: 16)
    static let random = "0123456789abcdef"

    /// A process ID no process can have: one above the kernel's `pid_max`.
    static func impossibleProcess() throws -> pid_t {
        let text = try String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8)
        return try #require(pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))) + 1
    }

    @Test("a temporary file whose process is gone is removed; a live save's and other files stay")
    func removesOnlyDeadSavesParts() throws {
        let directory = NSTemporaryDirectory() + "scmesh-stale-parts-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let dead = try Self.impossibleProcess()
        let deadPart = ".\(Self.id).\(dead)-\(Self.random).part"
        let kept = [
            ".\(Self.id).\(getpid())-\(Self.random).part",  // this process: a save still running
            ".\(Self.id).\(dead)-\(Self.random).partial",  // another suffix
            ".\(Self.id).\(dead)-0123.part",  // a short random part
            ".abcd.\(dead)-\(Self.random).part",  // not a message ID
            "\(Self.id)",  // a saved payload
            ".\(Self.id).\(Self.random).part",  // the old name, without a process ID
        ]
        for name in [deadPart] + kept {
            #expect(FileManager.default.createFile(atPath: directory + "/" + name, contents: Data([1, 2, 3])))
        }

        #expect(InboxSaver.removeStaleParts(in: directory) == [deadPart])
        let left = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(left == kept.sorted())
        #expect(InboxSaver.removeStaleParts(in: directory).isEmpty)
    }

    @Test("the process ID is read only from the temporary file's exact shape")
    func parsesOnlyTheExactShape() {
        #expect(InboxSaver.stalePartProcess(".\(Self.id).4242-\(Self.random).part") == 4242)
        #expect(InboxSaver.stalePartProcess(".\(Self.id).-\(Self.random).part") == nil)
        #expect(InboxSaver.stalePartProcess(".\(Self.id).0-\(Self.random).part") == nil)
        #expect(InboxSaver.stalePartProcess(".\(Self.id).x1-\(Self.random).part") == nil)
        #expect(InboxSaver.stalePartProcess("\(Self.id).4242-\(Self.random).part") == nil)
        #expect(InboxSaver.stalePartProcess(".\(Self.id).4242-\(Self.random).part.part") == nil)
        #expect(InboxSaver.stalePartProcess("") == nil)
    }

    @Test("a directory that cannot be read removes nothing and does not throw")
    func missingDirectory() {
        #expect(InboxSaver.removeStaleParts(in: "/nonexistent/scmesh-\(getpid())").isEmpty)
    }
}
