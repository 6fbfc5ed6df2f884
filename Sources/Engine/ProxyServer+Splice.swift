internal import Sys

/// A tunnel's bytes (SOCKS5 CONNECT, HTTP CONNECT, an upgraded connection)
/// moving through two kernel pipes with splice(2) instead of through the
/// relay buffers: socket → pipe → socket, the pages handed on rather than
/// copied into user space and back. Only for a pure byte stream (nothing of
/// it is parsed any more) and only once it has carried bulk: the pipes cost
/// four descriptors, which a short request-and-answer connection is better
/// off without.
final class SplicedRelay {
    /// Client → upstream, and upstream → client.
    let toUpstream: FileDescriptor.Pipe
    let toClient: FileDescriptor.Pipe
    /// Bytes in each pipe, as the splices in and out counted them.
    var upCount = 0
    var downCount = 0
    /// The last splice into the pipe found no room (a pipe holds 16 buffers,
    /// which may hold less than its 64 KiB when the segments are small): no
    /// more reading into it until some of it went out.
    var upFull = false
    var downFull = false

    /// A pipe's default size (16 pages).
    static let capacity = 64 * 1024

    init() throws(Errno) {
        toUpstream = try FileDescriptor.Pipe(nonBlocking: true)
        toClient = try FileDescriptor.Pipe(nonBlocking: true)
    }

    var upHasRoom: Bool { !upFull && upCount < Self.capacity }
    var downHasRoom: Bool { !downFull && downCount < Self.capacity }
}

extension ProxyServer {
    /// Bytes a tunnel carries, both ways, before it moves to pipes.
    static let spliceThreshold = 256 * 1024

    /// Moves a tunnel to pipes when it is worth it and safe: relaying a pure
    /// stream, both buffers drained (their bytes would otherwise pass the
    /// pipes' ones), no bytes waiting to be parsed. Out of descriptors, it
    /// stays as it is.
    func spliceIfWorthIt(_ connection: InboundConnection) {
        guard connection.spliced == nil, connection.phase == .relaying, connection.association == nil,
              connection.bytesUp + connection.bytesDown >= Self.spliceThreshold,
              connection.forwarding.map({ $0.passthrough }) ?? true,
              connection.received.isEmpty, connection.forwardHead == nil,
              connection.toUpstream.isEmpty, connection.toClient.isEmpty else { return }
        do { connection.spliced = try SplicedRelay() } catch {
            if error.isDescriptorShortage { warnOfDescriptorShortage(error) }
            return
        }
        trace("\(connection.description): spliced from here on")
    }

    /// The client's bytes into its pipe.
    func spliceFromClient(_ connection: InboundConnection, _ relay: SplicedRelay) {
        for _ in 0 ..< 4 {
            guard !connection.clientReadClosed, relay.upHasRoom else { return }
            let result: SysResult<Int>
            do { result = try connection.client.descriptor.splice(to: relay.toUpstream.writeEnd, count: SplicedRelay.capacity - relay.upCount) } catch {
                abort(connection, reason: "client: \(error)")
                return
            }
            switch result {
            case .wouldBlock:
                // Nothing to read, or no room in the pipe: only the second matters,
                // and only while the pipe holds something (an empty one has room).
                if relay.upCount > 0 { relay.upFull = true }
                return
            case .value(0):
                connection.clientReadClosed = true
                return
            case let .value(n):
                relay.upCount += n
            }
        }
    }

    /// The upstream's bytes into its pipe.
    func spliceFromUpstream(_ connection: InboundConnection, _ relay: SplicedRelay) {
        guard let upstream = connection.upstream else { return }
        for _ in 0 ..< 4 {
            guard !connection.upstreamReadClosed, relay.downHasRoom else { return }
            let result: SysResult<Int>
            do { result = try upstream.socket.descriptor.splice(to: relay.toClient.writeEnd, count: SplicedRelay.capacity - relay.downCount) } catch {
                abort(connection, reason: "upstream: \(error)")
                return
            }
            switch result {
            case .wouldBlock:
                if relay.downCount > 0 { relay.downFull = true }
                return
            case .value(0):
                connection.upstreamReadClosed = true
                return
            case let .value(n):
                relay.downCount += n
            }
        }
    }

    /// What `pump` does for a spliced tunnel: the pipes out to their sockets,
    /// half-closes on once a pipe is empty, the end when both ways are done.
    func pumpSpliced(_ connection: InboundConnection, _ relay: SplicedRelay) {
        guard let upstream = connection.upstream else { return }
        while relay.downCount > 0, !connection.clientWriteClosed {
            let result: SysResult<Int>
            do { result = try relay.toClient.readEnd.splice(to: connection.client.descriptor, count: relay.downCount) } catch {
                abort(connection, reason: "client: \(error)")
                return
            }
            guard case let .value(n) = result, n > 0 else { break }
            relay.downCount -= n
            relay.downFull = false
            connection.bytesDown += n
        }
        while relay.upCount > 0, !connection.upstreamWriteClosed {
            let result: SysResult<Int>
            do { result = try relay.toUpstream.readEnd.splice(to: upstream.socket.descriptor, count: relay.upCount) } catch {
                abort(connection, reason: "upstream: \(error)")
                return
            }
            guard case let .value(n) = result, n > 0 else { break }
            relay.upCount -= n
            relay.upFull = false
            connection.bytesUp += n
        }
        if connection.clientReadClosed, relay.upCount == 0, !connection.upstreamWriteClosed {
            upstream.socket.shutdown(.write)
            connection.upstreamWriteClosed = true
        }
        if connection.upstreamReadClosed, relay.downCount == 0, !connection.clientWriteClosed {
            connection.client.shutdown(.write)
            connection.clientWriteClosed = true
        }
        if connection.upstreamWriteClosed, connection.clientWriteClosed {
            finish(connection)
            return
        }
        updateInterest(connection)
    }
}
