import Foundation
import TestSupport

/// tools/alloc-check/count-mallocs.c, built for a test and preloaded into
/// Sluice: how many heap allocations a whole run made. Tests compare two
/// runs that differ only in how much traffic they carry, so that start-up
/// and exit cancel out and what is left is the cost of the extra traffic.
struct MallocCounter {
    let library: String
    let work: URL

    init(net: TestNetwork, work: URL) throws {
        self.work = work
        library = work.appendingPathComponent("count-mallocs.so").path
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../tools/alloc-check/count-mallocs.c").standardized.path
        let compiler = ["clang", "cc"].first { (try? net.run(["sh", "-c", "command -v \($0)"]))?.status == 0 } ?? "clang"
        try net.run([compiler, "-O2", "-shared", "-fPIC", "-o", library, source])
    }

    /// The variables that count a run into the log named `label`.
    func environment(_ label: String) -> [String] {
        ["LD_PRELOAD=\(library)", "SLUICE_MALLOC_LOG=\(log(label))"]
    }

    private func log(_ label: String) -> String { work.appendingPathComponent("mallocs-\(label)").path }

    /// Process `pid`'s count in the log named `label`; nil when it wrote none.
    func count(_ label: String, pid: Int32) -> Int? {
        // One line per process that exited (Sluice, its launcher, the commands): Sluice's is the one with its pid.
        let lines = (try? String(contentsOfFile: log(label), encoding: .utf8)) ?? ""
        return lines.split(separator: "\n").compactMap { line -> Int? in
            let fields = line.split(separator: " ")
            return fields.count == 2 && Int32(fields[0]) == pid ? Int(fields[1]) : nil
        }.first
    }
}
