import Foundation
import Glibc
import Sys
import Testing

@Suite struct EventTests {
    @Test func epollWakesOnEventFDWithItsToken() throws {
        let epoll = try Epoll()
        let wakeup = try EventFD()
        let timer = try TimerFD()
        try epoll.add(wakeup.descriptor, events: .readable, token: 0xDEAD_BEEF_0000_0001)
        try epoll.add(timer.descriptor, events: .readable, token: 2)
        var events = Epoll.EventBuffer(capacity: 8)

        #expect(try epoll.wait(into: &events, timeoutMilliseconds: 0) == 0)
        #expect(try wakeup.drain() == 0)

        try wakeup.signal()
        try wakeup.signal(2)
        let ready = try epoll.wait(into: &events, timeoutMilliseconds: 1000)
        #expect(ready == 1)
        #expect(events[0] == Epoll.Event(events: .readable, token: 0xDEAD_BEEF_0000_0001))
        #expect(try wakeup.drain() == 3)
        #expect(try epoll.wait(into: &events, timeoutMilliseconds: 0) == 0)

        try epoll.remove(wakeup.descriptor)
        try wakeup.signal()
        #expect(try epoll.wait(into: &events, timeoutMilliseconds: 0) == 0)
    }

    @Test func epollWakesWhenAnotherThreadSignals() throws {
        let epoll = try Epoll()
        let wakeup = try EventFD()
        try epoll.add(wakeup.descriptor, events: .readable, token: 5)
        var events = Epoll.EventBuffer(capacity: 2)
        // What another thread would do with the number: eventfd write semantics.
        let raw = wakeup.descriptor.rawValue
        let signaller = Thread {
            usleep(20_000)
            var one: UInt64 = 1
            _ = Glibc.write(raw, &one, 8)
        }
        signaller.start()
        let ready = try epoll.wait(into: &events, timeoutMilliseconds: 2000)
        #expect(ready == 1)
        #expect(events[0].token == 5)
        #expect(try wakeup.drain() == 1)
    }

    @Test func modifyChangesTokenAndInterest() throws {
        let epoll = try Epoll()
        let pipe = try FileDescriptor.Pipe(nonBlocking: true)
        try epoll.add(pipe.writeEnd, events: .readable, token: 1)
        var events = Epoll.EventBuffer(capacity: 2)
        #expect(try epoll.wait(into: &events, timeoutMilliseconds: 0) == 0)
        try epoll.modify(pipe.writeEnd, events: .writable, token: 9)
        #expect(try epoll.wait(into: &events, timeoutMilliseconds: 100) == 1)
        #expect(events[0] == Epoll.Event(events: .writable, token: 9))
        #expect(throws: Errno.fileExists) { try epoll.add(pipe.writeEnd, events: .readable, token: 1) }
        try epoll.remove(pipe.writeEnd)
        #expect(throws: Errno.noSuchFileOrDirectory) { try epoll.remove(pipe.writeEnd) }
    }

    @Test func timerFiresOnceWithinBound() throws {
        let epoll = try Epoll()
        let timer = try TimerFD()
        try epoll.add(timer.descriptor, events: .readable, token: 7)
        var events = Epoll.EventBuffer(capacity: 2)

        let start = DispatchTime.now().uptimeNanoseconds
        try timer.arm(afterNanoseconds: 20_000_000)
        #expect(try timer.readExpirations() == 0)
        let ready = try epoll.wait(into: &events, timeoutMilliseconds: 2000)
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        #expect(ready == 1)
        #expect(events[0].token == 7)
        #expect(elapsed >= 19_000_000)
        #expect(try timer.readExpirations() == 1)
        // One-shot: nothing more.
        #expect(try epoll.wait(into: &events, timeoutMilliseconds: 50) == 0)
    }

    @Test func periodicTimerCountsExpirationsAndDisarms() throws {
        let timer = try TimerFD()
        try timer.arm(afterNanoseconds: 1_000_000, everyNanoseconds: 1_000_000)
        usleep(30_000)
        #expect(try timer.readExpirations() >= 5)
        try timer.disarm()
        _ = try timer.readExpirations()
        usleep(10_000)
        #expect(try timer.readExpirations() == 0)
    }
}
