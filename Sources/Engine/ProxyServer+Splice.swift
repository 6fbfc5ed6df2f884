internal import Sys

/// A tunnel's bytes (SOCKS5 CONNECT, HTTP CONNECT, an upgraded connection)
/// moving through two kernel pipes with splice(2) instead of through the
/// relay buffers: socket → pipe → socket, the pages handed on rather than
/// copied into user space and back. Only for a pure byte stream (nothing of
/// it is parsed any more) and only once it has carried bulk: the pipes cost
/// four descriptors, which a short request-and-answer connection is better
/// off without.
final class SplicedRelay {
    /// One direction: a pipe, and what the splices in and out say it holds.
    final class Lane {
        let pipe: FileDescriptor.Pipe
        var count = 0
        /// The last splice into the pipe found no room (a pipe holds 16
        /// buffers, which may hold less than its 64 KiB when the segments are
        /// small): no more reading into it until some of it went out.
        var full = false

        init() throws(Errno) { pipe = try FileDescriptor.Pipe(nonBlocking: true) }

        var hasRoom: Bool { !full && count < SplicedRelay.capacity }
    }

    /// Client → upstream, and upstream → client.
    let up: Lane
    let down: Lane

    /// A pipe's default size (16 pages).
    static let capacity = 64 * 1024

    init() throws(Errno) {
        up = try Lane()
        down = try Lane()
    }
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
              connection.clientTLS == nil, connection.upstreamTLS == nil,
              connection.bytesUp + connection.bytesDown >= Self.spliceThreshold,
              connection.forwarding.map({ $0.passthrough && $0.webSocket == nil }) ?? true,
              connection.received.isEmpty, connection.forwardHead == nil,
              !connection.upstreamOwed, !connection.clientOwed else { return }
        do { connection.spliced = try SplicedRelay() } catch {
            if error.isDescriptorShortage { warnOfDescriptorShortage(error) }
            return
        }
        trace("\(connection.description): spliced from here on")
    }

    /// A socket's bytes into its lane's pipe, until the socket is empty or
    /// the pipe full. True at the socket's end of stream.
    func spliceIn(_ connection: InboundConnection, from socket: borrowing Socket, into lane: SplicedRelay.Lane, side: String) -> Bool {
        for _ in 0 ..< 4 {
            guard lane.hasRoom else { return false }
            let result: SysResult<Int>
            do { result = try socket.descriptor.splice(to: lane.pipe.writeEnd, count: SplicedRelay.capacity - lane.count) } catch {
                abort(connection, reason: "\(side): \(error)")
                return false
            }
            switch result {
            case .wouldBlock:
                // Nothing to read, or no room in the pipe: only the second matters,
                // and only while the pipe holds something (an empty one has room).
                if lane.count > 0 { lane.full = true }
                return false
            case .value(0):
                return true
            case let .value(n):
                lane.count += n
            }
        }
        return false
    }

    /// A lane's pipe out to its socket, as far as the socket takes; the bytes moved.
    /// Nil after an error (the connection is cut).
    func spliceOut(_ connection: InboundConnection, from lane: SplicedRelay.Lane, to socket: borrowing Socket, side: String) -> Int? {
        var moved = 0
        while lane.count > 0 {
            let result: SysResult<Int>
            do { result = try lane.pipe.readEnd.splice(to: socket.descriptor, count: lane.count) } catch {
                abort(connection, reason: "\(side): \(error)")
                return nil
            }
            guard case let .value(n) = result, n > 0 else { break }
            lane.count -= n
            lane.full = false
            moved += n
        }
        return moved
    }

    func spliceFromClient(_ connection: InboundConnection, _ relay: SplicedRelay) {
        guard !connection.clientReadClosed else { return }
        if spliceIn(connection, from: connection.client, into: relay.up, side: "client") { connection.clientReadClosed = true }
    }

    func spliceFromUpstream(_ connection: InboundConnection, _ relay: SplicedRelay) {
        guard !connection.upstreamReadClosed, let upstream = connection.upstream else { return }
        if spliceIn(connection, from: upstream.socket, into: relay.down, side: "upstream") { connection.upstreamReadClosed = true }
    }

    /// What `pump` does for a spliced tunnel: the pipes out to their sockets,
    /// then the half-closes as for buffers (`passHalfCloses`).
    func pumpSpliced(_ connection: InboundConnection, _ relay: SplicedRelay) {
        guard let upstream = connection.upstream else { return }
        if !connection.clientWriteClosed {
            guard let n = spliceOut(connection, from: relay.down, to: connection.client, side: "client") else { return }
            connection.bytesDown += n
        }
        if !connection.upstreamWriteClosed {
            guard let n = spliceOut(connection, from: relay.up, to: upstream.socket, side: "upstream") else { return }
            connection.bytesUp += n
        }
        if passHalfCloses(connection, upstream: upstream, upstreamOwed: relay.up.count > 0, clientOwed: relay.down.count > 0) { return }
        updateInterest(connection)
    }
}
