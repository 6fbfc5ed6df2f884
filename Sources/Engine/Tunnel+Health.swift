internal import Sys

/// The tunnel's side of the health checks (HealthChecks.swift): probe tokens
/// from the flows' counter, its scratch buffer, its mark in whole-host mode.
extension Tunnel: HealthCheckingLoop {
    var probeScratch: UnsafeMutableRawBufferPointer { scratch }
    var probeMark: UInt32? { configuration.mark }

    func nextProbeToken() -> UInt64 {
        defer { nextToken += 1 }
        return nextToken
    }

    func withEpoll<R>(_ body: (borrowing Epoll) -> R) -> R { body(epoll) }
}
