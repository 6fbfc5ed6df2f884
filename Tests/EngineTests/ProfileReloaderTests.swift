import Glibc
import Testing
@testable import Engine
import Sys

/// SIGHUP's reader: the read happens on its own thread and is handed over
/// when the eventfd says so; a SIGHUP during a read gets one more read.
@Suite(.serialized) struct ProfileReloaderTests {
    let folder = "/tmp/sluice-reloader-\(ProcessControl.currentID)"

    /// Waits (bounded) until the reloader's descriptor is readable.
    func waitReadable(_ reloader: ProfileReloader) -> Bool {
        var entry = pollfd(fd: reloader.descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 10_000) == 1
    }

    @Test func readsOnItsThreadAndReadsAgainWhenAsked() throws {
        Files.makeDirectory(folder)
        let path = folder + "/p.conf"
        defer { Files.remove(path); Files.removeDirectory(folder) }
        try Files.write("[Rule]\nDOMAIN,a.test,REJECT\nFINAL,DIRECT\n", to: path)
        let reloader = try ProfileReloader(path: path)
        #expect(reloader.start() == nil, "the read runs on a worker thread")
        // A second SIGHUP while the first read may still run: one more read follows.
        try Files.write("[Rule]\nDOMAIN,a.test,REJECT\nDOMAIN,b.test,REJECT\nFINAL,DIRECT\n", to: path)
        #expect(reloader.start() == nil)
        var counts: [Int] = []
        for _ in 0 ..< 2 {
            guard waitReadable(reloader) else { Issue.record("no read finished within 10 s"); return }
            reloader.deliver { outcome in
                if case let .loaded(profile) = outcome { counts.append(profile.rules.count) } else { Issue.record("\(outcome)") }
            }
            if counts.count == 2 { break }
        }
        // The last outcome is the file as it was after the last SIGHUP.
        #expect(counts.last == 2, "\(counts)")
        // A profile with errors comes back as its errors.
        try Files.write("[Rule]\nNONSENSE,x\n", to: path)
        #expect(reloader.start() == nil)
        guard waitReadable(reloader) else { Issue.record("no read finished within 10 s"); return }
        var failed = false
        reloader.deliver { outcome in if case let .failed(errors) = outcome { failed = errors.contains("p.conf:2") } }
        #expect(failed)
    }
}
