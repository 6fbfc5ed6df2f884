import Testing
@testable import Stack
import Wire

/// Passive reassembly as `sluice replay` uses it: the test plays a capture,
/// segments in whatever order, and checks the byte streams that come out.
@Suite struct PassiveTCPStreamTests {
    /// Collects what a stream hands on: bytes, with `nil` standing for each gap byte.
    final class Collector {
        var bytes: [UInt8?] = []
        var gaps: [Int] = []
        func take(_ chunk: PassiveTCPStream.Chunk) {
            switch chunk {
            case let .data(data): bytes += data.map { Optional($0) }
            case let .gap(n):
                gaps.append(n)
                bytes += [UInt8?](repeating: nil, count: n)
            }
        }
    }

    let data = bytes(3000)

    func send(_ stream: PassiveTCPStream, _ collector: Collector, isn: SequenceNumber, _ range: Range<Int>,
              syn: Bool = false, fin: Bool = false, canHold: Bool = true) {
        let payload = Array(data[range])
        payload.withUnsafeBytes { buffer in
            stream.receive(sequence: syn ? isn : isn + 1 + range.lowerBound, syn: syn, fin: fin, payload: buffer,
                           canHold: { canHold }, deliver: collector.take)
        }
    }

    @Test func outOfOrderSegmentsComeOutInOrder() {
        let stream = PassiveTCPStream(holdCapacity: 4096)
        let out = Collector()
        let isn = SequenceNumber(1000)
        send(stream, out, isn: isn, 0 ..< 0, syn: true)
        send(stream, out, isn: isn, 1000 ..< 1500)
        send(stream, out, isn: isn, 2000 ..< 2500, fin: true)
        #expect(out.bytes.isEmpty)
        #expect(stream.heldCapacity == 4096)
        send(stream, out, isn: isn, 0 ..< 1000)
        #expect(out.bytes.count == 1500)
        send(stream, out, isn: isn, 1500 ..< 2000)
        #expect(out.bytes.compactMap { $0 } == Array(data[0 ..< 2500]))
        #expect(out.gaps.isEmpty)
        #expect(stream.isFinished, "\(stream)")
        // The buffer for out-of-order data goes once no hole remains.
        #expect(stream.heldCapacity == 0)
    }

    @Test func duplicatesAndRetransmissionsAreDroppedOnce() {
        let stream = PassiveTCPStream(holdCapacity: 4096)
        let out = Collector()
        let isn = SequenceNumber(7)
        send(stream, out, isn: isn, 0 ..< 0, syn: true)
        send(stream, out, isn: isn, 0 ..< 0, syn: true)
        send(stream, out, isn: isn, 0 ..< 800)
        send(stream, out, isn: isn, 0 ..< 800)
        send(stream, out, isn: isn, 1600 ..< 2000)
        send(stream, out, isn: isn, 1600 ..< 2000)
        send(stream, out, isn: isn, 800 ..< 1600)
        send(stream, out, isn: isn, 0 ..< 2000)
        #expect(out.bytes.compactMap { $0 } == Array(data[0 ..< 2000]))
        #expect(out.bytes.count == 2000)
        #expect(stream.duplicateBytes == 800 + 400 + 2000, "\(stream)")
    }

    @Test func overlappingSegmentsGiveEachByteOnce() {
        let stream = PassiveTCPStream(holdCapacity: 4096)
        let out = Collector()
        let isn = SequenceNumber(500)
        send(stream, out, isn: isn, 0 ..< 0, syn: true)
        send(stream, out, isn: isn, 0 ..< 600)
        // In order but starting inside what was delivered (a retransmission that grew).
        send(stream, out, isn: isn, 400 ..< 1000)
        // Held pieces that overlap each other and the delivered part.
        send(stream, out, isn: isn, 1500 ..< 1800)
        send(stream, out, isn: isn, 1200 ..< 1600)
        send(stream, out, isn: isn, 900 ..< 1300)
        #expect(out.bytes.compactMap { $0 } == Array(data[0 ..< 1800]))
        #expect(out.bytes.count == 1800)
    }

    @Test func sequenceNumbersWrap() {
        let stream = PassiveTCPStream(holdCapacity: 4096)
        let out = Collector()
        let isn = SequenceNumber(0xffff_fc00)
        send(stream, out, isn: isn, 0 ..< 0, syn: true)
        send(stream, out, isn: isn, 1500 ..< 3000, fin: true)
        send(stream, out, isn: isn, 0 ..< 1500)
        #expect(out.bytes.compactMap { $0 } == data)
        #expect(stream.isFinished)
        #expect(stream.nextSequence == isn + 1 + 3000)
    }

    @Test func aStreamSeenMidFlowStartsAtItsFirstSegment() {
        let stream = PassiveTCPStream(holdCapacity: 4096)
        let out = Collector()
        let isn = SequenceNumber(90_000)
        send(stream, out, isn: isn, 1000 ..< 1400)
        send(stream, out, isn: isn, 1800 ..< 2000)
        send(stream, out, isn: isn, 1400 ..< 1800)
        // Older bytes than the first seen are retransmissions now.
        send(stream, out, isn: isn, 500 ..< 1000)
        #expect(out.bytes.compactMap { $0 } == Array(data[1000 ..< 2000]))
        #expect(stream.duplicateBytes == 500)
    }

    @Test func aHoleThatNeverFillsIsAGapAtTheEnd() {
        let stream = PassiveTCPStream(holdCapacity: 4096)
        let out = Collector()
        let isn = SequenceNumber(1)
        send(stream, out, isn: isn, 0 ..< 0, syn: true)
        send(stream, out, isn: isn, 0 ..< 100)
        send(stream, out, isn: isn, 300 ..< 400)
        send(stream, out, isn: isn, 600 ..< 700)
        stream.flush(out.take)
        #expect(out.gaps == [200, 200])
        #expect(out.bytes.count == 700)
        #expect(out.bytes[0 ..< 100].compactMap { $0 } == Array(data[0 ..< 100]))
        #expect(out.bytes[300 ..< 400].compactMap { $0 } == Array(data[300 ..< 400]))
        #expect(out.bytes[600 ..< 700].compactMap { $0 } == Array(data[600 ..< 700]))
        #expect(stream.missingBytes == 400)
    }

    @Test func pastTheHoldLimitTheHoleIsGivenUp() {
        // Out of order beyond what one direction may hold: gap, then on from there.
        let stream = PassiveTCPStream(holdCapacity: 1000)
        let out = Collector()
        let isn = SequenceNumber(1)
        send(stream, out, isn: isn, 0 ..< 0, syn: true)
        send(stream, out, isn: isn, 0 ..< 100)
        send(stream, out, isn: isn, 1500 ..< 1600)
        #expect(out.gaps == [1400])
        #expect(out.bytes.count == 1600)
        #expect(stream.overflows == 1)
        // The late hole's bytes are old now.
        send(stream, out, isn: isn, 100 ..< 1500)
        #expect(out.bytes.count == 1600)
        send(stream, out, isn: isn, 1600 ..< 1700)
        #expect(out.bytes[1500...].compactMap { $0 } == Array(data[1500 ..< 1700]))
    }

    @Test func whenTheTableHasNoRoomTheHoleIsGivenUp() {
        let stream = PassiveTCPStream(holdCapacity: 4096)
        let out = Collector()
        let isn = SequenceNumber(1)
        send(stream, out, isn: isn, 0 ..< 0, syn: true)
        send(stream, out, isn: isn, 200 ..< 300, canHold: false)
        #expect(out.gaps == [200])
        #expect(stream.heldCapacity == 0)
    }

    @Test func moreHolesThanTheAssemblerKeepsAreGivenUp() {
        let stream = PassiveTCPStream(holdCapacity: 4096)
        let out = Collector()
        let isn = SequenceNumber(1)
        send(stream, out, isn: isn, 0 ..< 0, syn: true)
        for i in 0 ..< 9 { send(stream, out, isn: isn, (100 + i * 200) ..< (200 + i * 200)) }
        // The ninth range did not fit: the eight held ones went out with their gaps.
        #expect(out.gaps.count == 9)
        #expect(out.bytes.count == 1800)
        for i in 0 ..< 9 {
            #expect(out.bytes[(100 + i * 200) ..< (200 + i * 200)].compactMap { $0 } == Array(data[(100 + i * 200) ..< (200 + i * 200)]))
        }
    }
}

/// The table over real IPv4 datagrams: directions, endings, limits.
@Suite struct PassiveTCPTableTests {
    static let client = IPv4Address(10, 0, 0, 1)
    static let server = IPv4Address(10, 0, 0, 2)

    /// One IPv4 datagram carrying a TCP segment.
    static func datagram(fromClient: Bool, sequence: UInt32, _ flags: TCPFlags, payload: [UInt8] = [],
                         clientPort: UInt16 = 40000) -> [UInt8] {
        let header = TCPHeader(sourcePort: fromClient ? clientPort : 80, destinationPort: fromClient ? 80 : clientPort,
                               sequenceNumber: SequenceNumber(sequence), acknowledgmentNumber: SequenceNumber(0),
                               flags: flags, windowSize: 65000, options: TCPOptions())
        let source = fromClient ? client : server, destination = fromClient ? server : client
        var out = [UInt8](repeating: 0xAA, count: 20 + header.headerLength + payload.count)
        out.withUnsafeMutableBytes { buffer in
            let ip = IPv4Header(source: source, destination: destination, protocol: .tcp,
                                payloadLength: header.headerLength + payload.count)
            let ipLength = try! ip.emit(into: buffer)
            let tcpLength = payload.withUnsafeBytes { p in
                try! header.emit(into: UnsafeMutableRawBufferPointer(rebasing: buffer[ipLength...]), source: source,
                                 destination: destination, payload: p)
            }
            payload.withUnsafeBytes { p in
                UnsafeMutableRawBufferPointer(rebasing: buffer[(ipLength + tcpLength)...]).copyMemory(from: p)
            }
        }
        return out
    }

    final class Log {
        var events: [String] = []
        var up: [UInt8] = []
        var down: [UInt8] = []
        func take(_ event: PassiveTCPTable.Event) {
            switch event {
            case let .opened(c): events.append("open #\(c.id) \(c.key)\(c.sawHandshake ? "" : " mid-flow")")
            case let .data(_, direction, bytes):
                if direction == .up { up += bytes } else { down += bytes }
            case let .gap(_, direction, n): events.append("gap \(direction) \(n)")
            case let .ended(c, reason): events.append("end #\(c.id) \(reason)")
            }
        }
    }

    func feed(_ table: PassiveTCPTable, _ log: Log, _ packets: [[UInt8]]) {
        for (i, packet) in packets.enumerated() {
            packet.withUnsafeBytes { buffer in
                guard let view = try? IPPacketView(buffer) else {
                    Issue.record("packet \(i) does not parse")
                    return
                }
                table.receive(view, at: .milliseconds(Int64(i)), log.take)
            }
        }
    }

    @Test func aWholeExchangeBothWays() {
        let table = PassiveTCPTable()
        let log = Log()
        let request = Array("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n".utf8)
        let response = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        feed(table, log, [
            Self.datagram(fromClient: true, sequence: 0xffff_fff0, .syn),
            Self.datagram(fromClient: false, sequence: 5000, [.syn, .ack]),
            Self.datagram(fromClient: true, sequence: 0xffff_fff1, .ack),
            // The request's second half is captured first, and then the whole request again.
            Self.datagram(fromClient: true, sequence: 0xffff_fff1 &+ 10, [.ack, .psh], payload: Array(request[10...])),
            Self.datagram(fromClient: true, sequence: 0xffff_fff1, [.ack, .psh], payload: Array(request[..<10])),
            Self.datagram(fromClient: true, sequence: 0xffff_fff1, [.ack, .psh], payload: request),
            Self.datagram(fromClient: false, sequence: 5001, [.ack, .psh, .fin], payload: response),
            Self.datagram(fromClient: true, sequence: 0xffff_fff1 &+ UInt32(request.count), [.ack, .fin]),
            Self.datagram(fromClient: false, sequence: 5002 + UInt32(response.count), .ack),
        ])
        #expect(log.up == request)
        #expect(log.down == response)
        #expect(log.events == ["open #1 TCP 10.0.0.1.40000 > 10.0.0.2.80", "end #1 closed"])
        #expect(table.openConnections == 0)
    }

    @Test func aCaptureThatStartsMidFlowTakesTheLowerPortForTheServer() {
        let table = PassiveTCPTable()
        let log = Log()
        feed(table, log, [
            Self.datagram(fromClient: false, sequence: 777, .ack, payload: Array("HTTP/1.1 204 No Content\r\n\r\n".utf8)),
            Self.datagram(fromClient: true, sequence: 123, .ack, payload: Array("GET /next HTTP/1.1\r\n\r\n".utf8)),
        ])
        table.finish(log.take)
        #expect(log.events == ["open #1 TCP 10.0.0.1.40000 > 10.0.0.2.80 mid-flow", "end #1 end of capture"])
        #expect(String(decoding: log.up, as: UTF8.self) == "GET /next HTTP/1.1\r\n\r\n")
        #expect(String(decoding: log.down, as: UTF8.self) == "HTTP/1.1 204 No Content\r\n\r\n")
    }

    @Test func aResetEndsTheConnectionAndHandsOnWhatWasHeld() {
        let table = PassiveTCPTable()
        let log = Log()
        feed(table, log, [
            Self.datagram(fromClient: true, sequence: 100, .syn),
            Self.datagram(fromClient: true, sequence: 111, .ack, payload: Array("world".utf8)),
            Self.datagram(fromClient: false, sequence: 9, .rst),
        ])
        #expect(log.events == ["open #1 TCP 10.0.0.1.40000 > 10.0.0.2.80", "gap up 10", "end #1 reset"])
        #expect(log.up == Array("world".utf8))
        #expect(table.heldBytes == 0)
    }

    @Test func connectionsPastTheLimitAreCountedNotFollowed() {
        var limits = PassiveTCPTable.Limits()
        limits.maximumConnections = 2
        let table = PassiveTCPTable(limits: limits)
        let log = Log()
        feed(table, log, (0 ..< 4).map { Self.datagram(fromClient: true, sequence: 1, .syn, clientPort: 40000 + UInt16($0)) })
        #expect(table.openConnections == 2)
        #expect(table.untracked == 2)
    }

    @Test func theTotalHoldLimitIsShared() {
        var limits = PassiveTCPTable.Limits()
        limits.holdCapacity = 4096
        limits.totalHoldCapacity = 4096
        let table = PassiveTCPTable(limits: limits)
        let log = Log()
        feed(table, log, [
            Self.datagram(fromClient: true, sequence: 1, .syn, clientPort: 1000),
            Self.datagram(fromClient: true, sequence: 1, .syn, clientPort: 1001),
            Self.datagram(fromClient: true, sequence: 12, .ack, payload: [1], clientPort: 1000),
            Self.datagram(fromClient: true, sequence: 12, .ack, payload: [2], clientPort: 1001),
        ])
        // The first holds its segment; the second has no room and gives its hole up.
        #expect(table.heldBytes == 4096)
        #expect(log.events.contains("gap up 10"))
        #expect(log.up == [2])
        table.finish(log.take)
        #expect(table.heldBytes == 0)
        #expect(log.up == [2, 1])
    }

    @Test func aNewSynAfterTheEndIsANewConnection() {
        let table = PassiveTCPTable()
        let log = Log()
        feed(table, log, [
            Self.datagram(fromClient: true, sequence: 1, .syn),
            Self.datagram(fromClient: true, sequence: 2, [.ack, .fin]),
            Self.datagram(fromClient: false, sequence: 50, [.syn, .ack]),
            Self.datagram(fromClient: false, sequence: 51, [.ack, .fin]),
            Self.datagram(fromClient: true, sequence: 9000, .syn),
        ])
        #expect(log.events == ["open #1 TCP 10.0.0.1.40000 > 10.0.0.2.80", "end #1 closed", "open #2 TCP 10.0.0.1.40000 > 10.0.0.2.80"])
    }

    @Test func silentConnectionsEndAfterTheIdleTimeout() {
        var limits = PassiveTCPTable.Limits()
        limits.idleTimeout = .milliseconds(100)
        let table = PassiveTCPTable(limits: limits)
        let log = Log()
        // Packet i arrives at i ms; the unanswered SYN at 0 ms is ended when the sweep at 100 ms finds it.
        var packets = [Self.datagram(fromClient: true, sequence: 1, .syn, clientPort: 1000)]
        for i in 1 ... 120 { packets.append(Self.datagram(fromClient: true, sequence: 1, .syn, clientPort: UInt16(2000 + i))) }
        feed(table, log, packets)
        #expect(log.events.contains("end #1 idle"))
        // The sweep at 120 ms ends what was last seen at 20 ms or before (#21), not later (#22 at 21 ms).
        #expect(log.events.contains("end #21 idle"))
        #expect(!log.events.contains("end #22 idle"))
        #expect(table.openConnections < 121)
    }

    @Test func defaultLimitsHoldASixtyFourKiBSegment() {
        let limits = PassiveTCPTable.Limits()
        #expect(limits.holdCapacity >= 65536)
        #expect(limits.idleTimeout == .seconds(600))
    }
}
