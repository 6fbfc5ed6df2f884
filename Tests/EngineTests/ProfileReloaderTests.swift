import Glibc
import Testing
@testable import Engine
import Sys

/// The reload's reader: the read happens on its own thread and is handed
/// over when the eventfd says so; a reload asked for during a read gets one
/// more read, and the reads' numbers say which answers whom.
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
        #expect(generation(reloader.start()) == 1, "the read runs on a worker thread")
        // A second request while the first read may still run (it is not
        // delivered yet, so it counts as running): read 2 follows, and a
        // third request before that starts waits for read 2 too.
        // Replaced whole (as editors save), so that read 1 sees one version or the other, never half a file.
        try Files.write("[Rule]\nDOMAIN,a.test,REJECT\nDOMAIN,b.test,REJECT\nFINAL,DIRECT\n", to: path + ".new")
        try Files.rename(path + ".new", to: path)
        #expect(generation(reloader.start()) == 2)
        #expect(generation(reloader.start()) == 2)
        var counts: [Int] = []
        var numbers: [Int] = []
        for _ in 0 ..< 2 {
            guard waitReadable(reloader) else { Issue.record("no read finished within 10 s"); return }
            reloader.deliver { outcome, number in
                numbers.append(number)
                if case let .loaded(profile) = outcome { counts.append(profile.rules.count) } else { Issue.record("\(outcome)") }
            }
            if counts.count == 2 { break }
        }
        // The last outcome is the file as it was after the last request.
        #expect(counts.last == 2, "\(counts)")
        #expect(numbers == [1, 2])
        // A profile with errors comes back as its errors.
        try Files.write("[Rule]\nNONSENSE,x\n", to: path)
        #expect(generation(reloader.start()) == 3)
        guard waitReadable(reloader) else { Issue.record("no read finished within 10 s"); return }
        var failed = false
        reloader.deliver { outcome, number in
            if case let .failed(errors) = outcome { failed = errors.contains("p.conf:2") && number == 3 }
        }
        #expect(failed)
    }

    /// A reload asked for while the last read is handed over (a control
    /// client's pipelined POST /reload) starts the next read at once; the
    /// requests that waited for "one more read" share it, and no read after
    /// it is made for nobody.
    @Test func aReadStartedWhileOneIsHandedOverServesTheWaitingRequests() throws {
        Files.makeDirectory(folder)
        let path = folder + "/q.conf"
        defer { Files.remove(path); Files.removeDirectory(folder) }
        try Files.write("[Rule]\nFINAL,DIRECT\n", to: path)
        let reloader = try ProfileReloader(path: path)
        #expect(generation(reloader.start()) == 1)
        #expect(generation(reloader.start()) == 2, "asked during read 1")
        guard waitReadable(reloader) else { Issue.record("no read finished within 10 s"); return }
        var numbers: [Int] = []
        reloader.deliver { _, number in
            numbers.append(number)
            #expect(generation(reloader.start()) == 2, "started while read 1 is handed over")
        }
        #expect(reloader.generation == 2, "no extra read for the request already served by read 2")
        guard waitReadable(reloader) else { Issue.record("no read finished within 10 s"); return }
        reloader.deliver { _, number in numbers.append(number) }
        #expect(numbers == [1, 2])
        #expect(generation(reloader.start()) == 3)
        guard waitReadable(reloader) else { Issue.record("no read finished within 10 s"); return }
        reloader.deliver { _, _ in }
    }

    /// The read's number when it runs on a worker thread; nil when it was read at once.
    func generation(_ start: ProfileReloader.Start) -> Int? {
        if case let .reading(number) = start { return number }
        return nil
    }
}
