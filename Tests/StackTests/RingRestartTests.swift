import Testing
@testable import Stack
import Wire

/// An emptied ring starts again at the start of its storage, so a kept-alive
/// flow's next message lies in one piece: one segment to the app, one write
/// upstream. Without it, a 1.3 KB response straddled the end of a 4 KiB ring
/// every third request and went to the app as two segments (two TUN writes,
/// and a pure ACK back from the app for the pair).
@Suite struct RingRestartTests {
    @Test func anEmptiedRingRestartsAtTheStartOfItsStorage() {
        let ring = ByteRing(capacity: 64 * 1024)
        #expect(bytes(3000).withUnsafeBytes { ring.append($0) } == 3000)
        #expect(ring.discard(3000) == 3000)
        ring.restartIfEmpty()
        #expect(bytes(2000, from: 7).withUnsafeBytes { ring.append($0) } == 2000)
        #expect(Array(ring.contiguousReadable(at: 0)) == bytes(2000, from: 7))
    }

    @Test func aRingThatHoldsBytesStaysWhereItIs() {
        let ring = ByteRing(capacity: 64 * 1024)
        #expect(bytes(3000).withUnsafeBytes { ring.append($0) } == 3000)
        #expect(ring.discard(2000) == 2000)
        ring.restartIfEmpty()
        var out = [UInt8](repeating: 0, count: 1000)
        #expect(out.withUnsafeMutableBytes { ring.peek(at: 0, into: $0) } == 1000)
        #expect(out == bytes(1000, from: 2000))
    }

    @Test func aDrainedReassemblerTakesTheNextMessageInOnePiece() {
        let reassembler = Reassembler(capacity: 64 * 1024)
        #expect(bytes(3000).withUnsafeBytes { reassembler.insert(offset: 0, $0) } == .accepted(advanced: 3000, trimmed: 0))
        reassembler.consume(3000)
        #expect(bytes(2000).withUnsafeBytes { reassembler.insert(offset: 0, $0) } == .accepted(advanced: 2000, trimmed: 0))
        #expect(reassembler.ring.contiguousReadable(at: 0).count == 2000)
    }

    /// Out-of-order bytes are placed relative to the ring's head: a drained
    /// ring that holds some must not move, or they would be read in the wrong place.
    @Test func aReassemblerHoldingOutOfOrderBytesDoesNotRestart() {
        let reassembler = Reassembler(capacity: 64 * 1024)
        let stream = bytes(5000)
        #expect(stream[0 ..< 3000].withUnsafeBytes { reassembler.insert(offset: 0, $0) } == .accepted(advanced: 3000, trimmed: 0))
        #expect(stream[3100 ..< 3200].withUnsafeBytes { reassembler.insert(offset: 100, $0) } == .accepted(advanced: 0, trimmed: 0))
        reassembler.consume(3000)
        #expect(stream[3000 ..< 3100].withUnsafeBytes { reassembler.insert(offset: 0, $0) } == .accepted(advanced: 200, trimmed: 0))
        var out = [UInt8](repeating: 0, count: 200)
        #expect(out.withUnsafeMutableBytes { reassembler.read(into: $0) } == 200)
        #expect(out == Array(stream[3000 ..< 3200]))
    }

    /// Packet level: after the first response is acknowledged, a second one
    /// that would have crossed the end of the send ring's 4 KiB storage goes
    /// out as one segment, and nothing else.
    @Test func aResponseAfterAnAcknowledgedOneIsOneSegment() {
        var configuration = plainConfiguration()
        configuration.maximumSegmentSize = 4000
        configuration.sendBufferSize = 64 * 1024
        let h = TCPHarness.synReceived(configuration, synOptions: mssOption(4000))
        let rcv = remoteISS + 1, snd = localISS + 1
        h.send(fromPeer(rcv, ack: snd, []))
        h.recv([])
        #expect(h.write(bytes(3000)) == 3000)
        h.recv([fromUs(snd, ack: rcv, [.psh], payload: bytes(3000))])
        h.send(fromPeer(rcv, ack: snd + 3000, []))
        h.recv([])
        #expect(h.write(bytes(2000, from: 3000)) == 2000)
        h.recv([fromUs(snd + 3000, ack: rcv, [.psh], payload: bytes(2000, from: 3000))])
    }
}
