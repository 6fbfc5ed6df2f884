// Epoll exists because the event loop waits on the TUN, sockets, an eventfd
// and a timerfd at once. Each registration carries a UInt64 token of the
// caller's choosing, and wait() fills a caller-owned buffer, so the loop
// neither allocates nor keeps a table from descriptor to handler.
public import CShim
import Glibc

public struct Epoll: ~Copyable {
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

    /// Waits up to `timeoutMilliseconds` (-1: forever, 0: poll) and fills
    /// `events` from the front; returns how many entries are valid. EINTR is
    /// retried with the same timeout, so a signal can lengthen the wait.
    public func wait(
        into events: UnsafeMutableBufferPointer<epoll_event>,
        timeoutMilliseconds: Int32
    ) throws(Errno) -> Int {
        let count = try valueOrErrno {
            epoll_wait(descriptor.rawValue, events.baseAddress, Int32(events.count), timeoutMilliseconds)
        }.get()
        return Int(count)
    }

    /// Reads entry `index` of a buffer wait() filled. The kernel's struct is
    /// packed on x86_64, so this goes through the shim rather than field access.
    public static func event(at index: Int, in events: UnsafeMutableBufferPointer<epoll_event>) -> Event {
        let pointer = events.baseAddress! + index
        return Event(
            events: Events(rawValue: cshim_epoll_event_events(pointer)),
            token: cshim_epoll_event_token(pointer))
    }
}
