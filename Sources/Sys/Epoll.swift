// Epoll exists because the event loop waits on the TUN, sockets, an eventfd
// and a timerfd at once. Each registration carries a UInt64 token of the
// caller's choosing, and wait() fills a caller-owned buffer, so the loop
// neither allocates nor keeps a table from descriptor to handler.
import CShim
import Glibc

public struct Epoll: ~Copyable, Sendable {
    public let descriptor: FileDescriptor

    /// The interest and readiness bits, as epoll(7) spells them.
    public struct Events: OptionSet, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let readable = Events(rawValue: EPOLLIN.rawValue)
        public static let writable = Events(rawValue: EPOLLOUT.rawValue)
        public static let priority = Events(rawValue: EPOLLPRI.rawValue)
        public static let error = Events(rawValue: EPOLLERR.rawValue)
        public static let hangup = Events(rawValue: EPOLLHUP.rawValue)
        public static let readHangup = Events(rawValue: EPOLLRDHUP.rawValue)
        public static let edgeTriggered = Events(rawValue: EPOLLET.rawValue)
        public static let oneShot = Events(rawValue: EPOLLONESHOT.rawValue)

        public var description: String {
            let names: [(Events, String)] = [
                (.readable, "in"), (.writable, "out"), (.priority, "pri"), (.error, "err"),
                (.hangup, "hup"), (.readHangup, "rdhup"), (.edgeTriggered, "et"), (.oneShot, "oneshot"),
            ]
            let set = names.filter { contains($0.0) }.map(\.1)
            return "[" + set.joined(separator: ",") + "]"
        }
    }

    /// One ready descriptor as wait() reports it.
    public struct Event: Sendable, Hashable, CustomStringConvertible {
        public var events: Events
        public var token: UInt64
        public init(events: Events, token: UInt64) {
            self.events = events
            self.token = token
        }
        public var description: String { "token \(token) \(events)" }
    }

    /// epoll_create1(EPOLL_CLOEXEC).
    public init() throws(Errno) {
        let raw = try valueOrErrno { epoll_create1(Int32(EPOLL_CLOEXEC)) }.get()
        descriptor = FileDescriptor(rawValue: raw)
    }

    public func add(_ fd: borrowing FileDescriptor, events: Events, token: UInt64) throws(Errno) {
        try control(EPOLL_CTL_ADD, fd.rawValue, events, token)
    }

    public func modify(_ fd: borrowing FileDescriptor, events: Events, token: UInt64) throws(Errno) {
        try control(EPOLL_CTL_MOD, fd.rawValue, events, token)
    }

    public func remove(_ fd: borrowing FileDescriptor) throws(Errno) {
        try control(EPOLL_CTL_DEL, fd.rawValue, [], 0)
    }

    /// Raw-number variants, for descriptors owned elsewhere (a socket inside another type).
    public func add(rawDescriptor: Int32, events: Events, token: UInt64) throws(Errno) {
        try control(EPOLL_CTL_ADD, rawDescriptor, events, token)
    }

    public func modify(rawDescriptor: Int32, events: Events, token: UInt64) throws(Errno) {
        try control(EPOLL_CTL_MOD, rawDescriptor, events, token)
    }

    public func remove(rawDescriptor: Int32) throws(Errno) {
        try control(EPOLL_CTL_DEL, rawDescriptor, [], 0)
    }

    private func control(_ operation: Int32, _ fd: Int32, _ events: Events, _ token: UInt64) throws(Errno) {
        var event = epoll_event()
        cshim_epoll_event_set(&event, events.rawValue, token)
        _ = try valueOrErrno { epoll_ctl(descriptor.rawValue, operation, fd, &event) }.get()
    }

    /// A caller-owned array of kernel epoll_event records, allocated once
    /// and reused by every wait(), so waiting never allocates.
    public struct EventBuffer: ~Copyable {
        let storage: UnsafeMutableBufferPointer<epoll_event>
        /// How many entries the last wait() filled.
        public internal(set) var count: Int = 0

        public init(capacity: Int) {
            precondition(capacity > 0, "an epoll event buffer needs room for one event")
            storage = .allocate(capacity: capacity)
            storage.initialize(repeating: epoll_event())
        }

        deinit { storage.deallocate() }

        public var capacity: Int { storage.count }

        /// Entry `index` (< count) of the last wait(). The kernel's struct is
        /// packed on x86_64, so this reads it through the shim, not by field.
        public subscript(index: Int) -> Event {
            precondition(index >= 0 && index < count, "epoll event \(index) of \(count)")
            let pointer = storage.baseAddress! + index
            return Event(
                events: Events(rawValue: cshim_epoll_event_events(pointer)),
                token: cshim_epoll_event_token(pointer))
        }
    }

    /// Waits up to `timeoutMilliseconds` (-1: forever, 0: poll) and fills
    /// `buffer` from the front; returns how many entries are valid (also
    /// `buffer.count`). EINTR is retried with the same timeout, so a signal
    /// can lengthen the wait.
    @discardableResult
    public func wait(into buffer: inout EventBuffer, timeoutMilliseconds: Int32) throws(Errno) -> Int {
        let storage = buffer.storage
        buffer.count = 0
        let ready = try valueOrErrno {
            epoll_wait(descriptor.rawValue, storage.baseAddress, Int32(storage.count), timeoutMilliseconds)
        }.get()
        buffer.count = Int(ready)
        return Int(ready)
    }
}
