internal import Sys

/// `sluice proxy` checks its fallback and url-test groups' members as the
/// tunnel does (HealthChecks.swift): probes in the loop's epoll under tokens
/// of their own, due checks and deadlines taken at each 200 ms sweep.
extension ProxyServer: HealthCheckingLoop {
    /// Probe tokens: between the connections' and the upstream associations'.
    static let firstProbeToken: UInt64 = 1 << 55

    var probeScratch: UnsafeMutableRawBufferPointer { scratch }
    var probeMark: UInt32? { nil }

    func nextProbeToken() -> UInt64 {
        defer { nextProbe += 1 }
        return Self.firstProbeToken + nextProbe
    }

    func withEpoll<R>(_ body: (borrowing Epoll) -> R) -> R { body(epoll) }

    /// At each sweep: probes past their deadline fail, due checks start.
    func sweepHealthChecks() {
        guard !probes.isEmpty || director.hasHealthChecks else { return }
        if let deadline = probeDeadline, deadline <= now {
            expireProbes()
            startDueHealthChecks()
        }
    }
}
