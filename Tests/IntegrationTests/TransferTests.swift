import Foundation
import Testing
import TestSupport

/// Issue #3's proof against Linux's TCP: 256 MiB each way through Sluice's
/// stack and a real TUN, sha256-checked, first clean and then with 2% drop,
/// 2% reorder and 1% duplicate injected between the TUN and the stack (both
/// ways). Every transfer must complete byte-exact within its time bound.
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces and TUN devices"), .serialized)
final class TransferTests {
    static let size = 256 * 1024 * 1024
    let pair: ServerPair
    let expected: String

    init() throws {
        pair = try ServerPair("xfer")
        try pair.makeFile("256m.bin", bytes: Self.size)
        expected = try pair.digest("256m.bin")
    }

    func download(options: [String], timeout: Double) throws {
        let r = try pair.exec("curl -sS http://10.88.0.2:8080/256m.bin | sha256sum", options: options, timeout: timeout)
        #expect(String(r.stdout.prefix(64)) == expected, "download: \(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("\(Self.size) bytes down") || r.stderr.contains("bytes down"), "\(r.stderr)")
    }

    func upload(options: [String], timeout: Double) throws {
        let received = pair.path("upload.sha")
        try pair.net.start(["sh", "-c", "nc -l 10.88.0.2 9000 | sha256sum > \(received)"], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9000"))
        let r = try pair.exec("nc -N 10.88.0.2 9000 < \(pair.path("256m.bin"))", options: options, timeout: timeout)
        #expect(r.status == 0, "upload: \(r.stderr)")
        let done = TestNetwork.waitUntil(seconds: 30) {
            ((try? String(contentsOfFile: received, encoding: .utf8)) ?? "").count >= 64
        }
        #expect(done)
        #expect(String(((try? String(contentsOfFile: received, encoding: .utf8)) ?? "").prefix(64)) == expected)
    }

    @Test func cleanTransfersBothWays() throws {
        try download(options: [], timeout: 300)
        try upload(options: [], timeout: 300)
    }

    @Test func lossyTransfersBothWays() throws {
        let faults = ["--faults", "drop=0.02,reorder=0.02,duplicate=0.01", "--fault-seed", "7"]
        try download(options: faults, timeout: 900)
        try upload(options: faults, timeout: 900)
    }
}
