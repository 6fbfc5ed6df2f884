internal import Sys
internal import Stack

extension ProxyServer {
    /// accept(2) failed for want of a descriptor. The client stays in the
    /// listen backlog, so the listeners would stay readable and a
    /// level-triggered loop would retry at once, over and over: they are not
    /// watched until the next sweep (at most 200 ms), when flows may have closed.
    func pauseListeners(_ error: Errno) {
        warnOfDescriptorShortage(error)
        guard listenersPausedUntil == nil else { return }
        listenersPausedUntil = now + .milliseconds(100)
        watchListeners([])
    }

    func resumeListeners(now time: Instant) {
        guard let until = listenersPausedUntil, until <= time else { return }
        listenersPausedUntil = nil
        watchListeners(.readable)
    }

    func watchListeners(_ events: Epoll.Events) {
        if let socksListener { try? epoll.modify(socksListener.socket.descriptor, events: events, token: Self.socksToken) }
        if let httpListener { try? epoll.modify(httpListener.socket.descriptor, events: events, token: Self.httpToken) }
    }

    /// Said once per ten seconds, not once per client: a shortage lasts until some connections close.
    func warnOfDescriptorShortage(_ error: Errno) {
        if let last = lastDescriptorWarning, now < last + .seconds(10) { return }
        lastDescriptorWarning = now
        log("sluice: proxy: \(OpenFilesLimit.shortage(error)): new clients wait in the listen backlog, new upstream connections fail, until some close; raise the hard limit (ulimit -Hn, or LimitNOFILE= for a service)")
    }
}
