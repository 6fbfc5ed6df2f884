import Foundation
import Sys
import Synchronization
import Testing

@Suite struct WorkerThreadTests {
    final class Box: Sendable {
        let value = Atomic<Int>(0)
        let wake: EventFD
        init() throws { wake = try EventFD() }
    }

    @Test func runsOnAnotherThreadUntilJoined() throws {
        let box = try Box()
        let caller = pthread_self()
        let thread = try WorkerThread {
            // Wait (bounded) for the caller's signal, then report whether we are a different thread.
            _ = try? box.wake.wait(timeoutMilliseconds: 5000)
            box.value.store(pthread_equal(pthread_self(), caller) == 0 ? 1 : -1, ordering: .releasing)
        }
        usleep(20_000)
        #expect(box.value.load(ordering: .acquiring) == 0) // still waiting: the caller did not block
        try box.wake.signal()
        thread.join()
        #expect(box.value.load(ordering: .acquiring) == 1)
    }

    /// A worker thread (the capture writers) takes no signal, even when its
    /// creator takes them all: the kernel would hand SIGHUP or SIGTERM to a
    /// thread that does not block it, and their default ends the process
    /// (`exec --pcap` died on the SIGHUP meant to reload its profile).
    @Test func workerThreadsBlockEverySignal() throws {
        var none = sigset_t(), saved = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        let box = try Box()
        let thread = try WorkerThread {
            var mask = sigset_t()
            pthread_sigmask(SIG_BLOCK, nil, &mask)
            let blocked = [SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGUSR1, SIGPIPE].filter { sigismember(&mask, $0) == 1 }.count
            box.value.store(blocked, ordering: .releasing)
        }
        thread.join()
        #expect(box.value.load(ordering: .acquiring) == 6)
        // The creator's own mask is as it was.
        var after = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &after)
        #expect(sigismember(&after, SIGHUP) == 0)
    }

    /// The capture writer's thread runs only on cores nothing else wants,
    /// and only that thread: the caller keeps its policy.
    @Test func idleCurrentThreadIsSchedIdleForThatThreadOnly() throws {
        let box = try Box()
        let before = sched_getscheduler(0)
        let thread = try WorkerThread {
            WorkerThread.idleCurrentThread()
            box.value.store(Int(sched_getscheduler(0)), ordering: .releasing)
        }
        thread.join()
        #expect(box.value.load(ordering: .acquiring) == 5) // SCHED_IDLE
        #expect(sched_getscheduler(0) == before)
    }

    @Test func droppingJoins() throws {
        let box = try Box()
        do {
            _ = try WorkerThread {
                usleep(50_000)
                box.value.store(7, ordering: .releasing)
            }
        }
        #expect(box.value.load(ordering: .acquiring) == 7)
    }

    @Test func eventFDWaitTimesOutOrWakes() throws {
        let wake = try EventFD()
        let start = ContinuousClock.now
        #expect(try wake.wait(timeoutMilliseconds: 30) == false)
        #expect(ContinuousClock.now - start >= .milliseconds(25))
        try wake.signal()
        #expect(try wake.wait(timeoutMilliseconds: 5000) == true)
        #expect(try wake.wait(timeoutMilliseconds: 0) == true) // wait does not drain
        #expect(try wake.drain() == 1)
    }

    @Test func wallClockIsTheRealtimeClock() {
        let ours = WallClock.now()
        let foundation = UInt64(Date().timeIntervalSince1970 * 1e9)
        #expect(ours > 1_700_000_000_000_000_000)
        #expect(ours.distance(to: foundation).magnitude < 1_000_000_000)
    }

    @Test func createWriteAllRename() throws {
        let dir = NSTemporaryDirectory() + "sluice-sys-files-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.log"
        let bytes = [UInt8](repeating: 0x61, count: 300_000)
        do {
            let file = try FileDescriptor.create(path)
            try bytes.withUnsafeBytes { try file.writeAll($0) }
        }
        do {
            let file = try FileDescriptor.create(path, append: true)
            try [UInt8]([0x62]).withUnsafeBytes { try file.writeAll($0) }
        }
        #expect(FileManager.default.contents(atPath: path)?.count == 300_001)
        #expect(FileManager.default.contents(atPath: path)?.last == 0x62)
        do { _ = try FileDescriptor.create(path) } // truncates
        #expect(FileManager.default.contents(atPath: path)?.count == 0)
        try Files.rename(path, to: dir + "/b.log")
        #expect(!Files.exists(path) && Files.exists(dir + "/b.log"))
        #expect(throws: Errno.noSuchFileOrDirectory) { try Files.rename(path, to: dir + "/c.log") }
        #expect(throws: Errno.noSuchFileOrDirectory) { _ = try FileDescriptor.create(dir + "/missing/x") }
    }
}
