import Testing
@testable import Stack
import Wire

/// A sink that gathers, as the TUN's writev does: it keeps the headers and
/// the payload apart, as the table handed them over.
struct GatheringSink: PacketSink {
    var pieces: [(headers: [UInt8], payload: [UInt8])] = []
    var copied = 0
    /// As the TUN with a virtio_net_hdr: the device completes TCP checksums.
    var completesTCPChecksums = false

    mutating func send(capacity: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Int) {
        var buffer = [UInt8](repeating: 0, count: capacity)
        let n = buffer.withUnsafeMutableBytes { fill($0) }
        if n > 0 { pieces.append((Array(buffer.prefix(n)), [])); copied += 1 }
    }

    mutating func send(headerCapacity: Int, payload: UnsafeRawBufferPointer, _ fillHeaders: (UnsafeMutableRawBufferPointer) -> Int) {
        var buffer = [UInt8](repeating: 0, count: headerCapacity)
        let n = buffer.withUnsafeMutableBytes { fillHeaders($0) }
        if n > 0 { pieces.append((Array(buffer.prefix(n)), Array(payload))) }
    }
}

/// Our data segments reach the TUN as headers plus the payload where it lies
/// in the send ring (one copy fewer per segment); joined, the pieces are
/// byte for byte the datagram the copying path builds.
extension TCPFlowTableTests {
    @Test(arguments: [false, true])
    func headersWrittenApartMatchTheWholeDatagram(v6: Bool) {
        let (source, destination) = v6 ? (server6, app6) : (server4, app4)
        let header = TCPHeader(sourcePort: 80, destinationPort: 40000, sequenceNumber: SequenceNumber(7), acknowledgmentNumber: SequenceNumber(9),
                               flags: [.ack, .psh], windowSize: 500, options: TCPOptions(timestamps: TCPTimestamps(value: 1, echoReply: 2)))
        let payload = bytes(1300)
        var whole = [UInt8](repeating: 0, count: 200 + payload.count)
        let total = whole.withUnsafeMutableBytes { out in
            payload.withUnsafeBytes { IPFraming.writeTCP(into: out, source: source, destination: destination, header: header, payload: $0, identification: 5) }
        }
        var headers = [UInt8](repeating: 0, count: IPFraming.maximumTCPOverhead)
        let n = headers.withUnsafeMutableBytes { out in
            payload.withUnsafeBytes { IPFraming.writeTCPHeaders(into: out, source: source, destination: destination, header: header, payload: $0, identification: 5) }
        }
        #expect(total > 0 && n == total - payload.count)
        #expect(Array(headers.prefix(n)) + payload == Array(whole.prefix(total)))
        // writeTCP is built on writeTCPHeaders, so the comparison alone proves
        // little: the joined datagram must also stand on its own.
        let (from, to, segment) = tcp(Array(headers.prefix(n)) + payload)
        #expect(from == source && to == destination && segment.payload == payload)
        #expect(segment.header.sequenceNumber == header.sequenceNumber && segment.header.options == header.options)
    }

    /// An app connection over IPv4 with an MSS of 1000, handshake done.
    func establishedWithMSS1000(_ table: TCPFlowTable) -> (FlowKey, TCPConnection)? {
        var sink = CollectingSink()
        guard case let .connectionRequest(key) = input(table, datagram(fromPeer(remoteISS, .syn, options: mssOption(1000)), from: app4, to: server4), sink: &sink) else {
            Issue.record("no request")
            return nil
        }
        let connection = table.accept(key, now: .milliseconds(5), sink: &sink)!
        _ = input(table, datagram(fromPeer(remoteISS + 1, ack: connection.sendNext, []), from: app4, to: server4), sink: &sink)
        return (key, connection)
    }

    /// Checksum offload: headers written with only the pseudo-header's sum
    /// become, once a device completes the sum over the TCP header and
    /// payload (as the app's kernel does with NEEDS_CSUM), the very datagram
    /// the full computation builds. Pure ACKs and odd lengths included.
    @Test(arguments: [false, true])
    func partialChecksumsCompleteToTheWholeDatagram(v6: Bool) {
        let (source, destination) = v6 ? (server6, app6) : (server4, app4)
        for count in [0, 1, 1299, 1300] {
            let header = TCPHeader(sourcePort: 80, destinationPort: 40000, sequenceNumber: SequenceNumber(7), acknowledgmentNumber: SequenceNumber(9),
                                   flags: count == 0 ? [.ack] : [.ack, .psh], windowSize: 500, options: TCPOptions(timestamps: TCPTimestamps(value: 1, echoReply: 2)))
            let payload = bytes(count, from: 3)
            var whole = [UInt8](repeating: 0, count: 200 + payload.count)
            let total = whole.withUnsafeMutableBytes { out in
                payload.withUnsafeBytes { IPFraming.writeTCP(into: out, source: source, destination: destination, header: header, payload: $0, identification: 5) }
            }
            var headers = [UInt8](repeating: 0, count: IPFraming.maximumTCPOverhead)
            let n = headers.withUnsafeMutableBytes { out in
                payload.withUnsafeBytes {
                    IPFraming.writeTCPHeaders(into: out, source: source, destination: destination, header: header, payload: $0,
                                              identification: 5, partialChecksum: true)
                }
            }
            #expect(total > 0 && n == total - payload.count)
            var joined = Array(headers.prefix(n)) + payload
            #expect(joined != Array(whole.prefix(total)), "count \(count): the sum was left partial")
            joined.withUnsafeMutableBytes { InternetChecksum.completePartial(in: $0, start: v6 ? 40 : 20, offset: 16) }
            #expect(joined == Array(whole.prefix(total)), "count \(count)")
        }
    }

    /// A sink whose device completes checksums gets partial ones from the
    /// table, for data segments and pure ACKs alike.
    @Test func theTableLeavesChecksumsToASinkThatCompletesThem() {
        let table = plainTable()
        guard let (key, connection) = establishedWithMSS1000(table) else { return }
        #expect(bytes(1500).withUnsafeBytes { connection.write($0) } == 1500)
        var offloading = GatheringSink(completesTCPChecksums: true)
        table.flush(key, now: .milliseconds(6), sink: &offloading)
        #expect(offloading.pieces.map(\.payload.count) == [1000, 500])
        var stream: [UInt8] = []
        for piece in offloading.pieces {
            var datagram = piece.headers + piece.payload
            let verifies = datagram.withUnsafeBytes { (try? IPPacketView($0))?.verifyUpperLayerChecksum() }
            #expect(verifies == false, "a partial sum does not verify before completion")
            datagram.withUnsafeMutableBytes { InternetChecksum.completePartial(in: $0, start: 20, offset: 16) }
            let (from, to, segment) = tcp(datagram)   // verifies the checksum
            #expect(from == server4 && to == app4)
            stream += segment.payload
        }
        #expect(stream == bytes(1500))
    }

    @Test func dataSegmentsLeaveTheTableAsHeadersAndTheirPayload() {
        let table = plainTable()
        guard let (key, connection) = establishedWithMSS1000(table) else { return }
        #expect(bytes(2500).withUnsafeBytes { connection.write($0) } == 2500)
        var gathering = GatheringSink()
        table.flush(key, now: .milliseconds(6), sink: &gathering)
        #expect(gathering.copied == 0)
        #expect(gathering.pieces.map(\.payload.count) == [1000, 1000, 500])
        // Each pair is a valid datagram carrying the stream's bytes in order.
        var stream: [UInt8] = []
        for piece in gathering.pieces {
            let (from, to, segment) = tcp(piece.headers + piece.payload)
            #expect(from == server4 && to == app4 && segment.payload == piece.payload)
            stream += segment.payload
        }
        #expect(stream == bytes(2500))
    }
}
