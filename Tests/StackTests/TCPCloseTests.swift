import Testing
@testable import Stack
import Wire

/// Closing: RFC 9293 §3.6 and §3.10.7.4 (eighth, the FIN), half-close both
/// ways, simultaneous close, TIME-WAIT.
@Suite struct TCPCloseTests {
    let rcv = remoteISS + 1
    let snd = localISS + 1

    @Test func peerFinMovesToCloseWaitAndIsAcknowledgedAtOnce() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, .fin))
        h.recv([fromUs(snd, ack: rcv + 1, [])])
        #expect(h.connection.state == .closeWait)
        #expect(h.connection.takeEvents() == .readClosed)
        #expect(h.connection.isReadClosed)
    }

    @Test func finAfterDataIsProcessedWithTheData() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, [.fin, .psh], payload: bytes(10)))
        h.recv([fromUs(snd, ack: rcv + 11, [], window: 3990)])
        #expect(!h.connection.isReadClosed) // ten bytes still to read
        #expect(h.read() == bytes(10))
        #expect(h.connection.isReadClosed)
    }

    @Test func finAheadOfMissingDataWaitsForIt() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv + 10, ack: snd, .fin, payload: bytes(10, from: 10)))
        h.recv([fromUs(snd, ack: rcv, [])])
        #expect(h.connection.state == .established)
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(10)))
        h.recv([fromUs(snd, ack: rcv + 21, [], window: 3980)])
        #expect(h.connection.state == .closeWait)
        #expect(h.read() == bytes(20))
    }

    @Test func closeWaitKeepsSendingThenLastAckThenClosed() {
        // Half-close: the app shut its write side; we still send what the upstream gives us.
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, .fin))
        h.sent.removeAll()
        #expect(h.write(bytes(100)) == 100)
        h.recv([fromUs(snd, ack: rcv + 1, [.psh], payload: bytes(100))])
        h.connection.shutdownWrite()
        h.poll()
        h.recv([fromUs(snd + 100, ack: rcv + 1, .fin)])
        #expect(h.connection.state == .lastAck)
        h.send(fromPeer(rcv + 1, ack: snd + 101, []))
        h.recv([])
        #expect(h.connection.state == .closed)
    }

    @Test func lastAckRetransmitsItsFin() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, .fin))
        h.connection.shutdownWrite()
        h.poll()
        h.sent.removeAll()
        h.advance(.seconds(1))
        h.recv([fromUs(snd, ack: rcv + 1, .fin)])
        #expect(h.connection.state == .lastAck)
    }

    @Test func activeCloseThroughFinWait2AndTimeWait() {
        let h = TCPHarness.established()
        h.connection.shutdownWrite()
        h.poll()
        h.recv([fromUs(snd, ack: rcv, .fin)])
        #expect(h.connection.state == .finWait1)
        h.send(fromPeer(rcv, ack: snd + 1, []))
        h.recv([])
        #expect(h.connection.state == .finWait2)
        h.send(fromPeer(rcv, ack: snd + 1, .fin))
        h.recv([fromUs(snd + 1, ack: rcv + 1, [])])
        #expect(h.connection.state == .timeWait)
        h.advance(.milliseconds(1999))
        #expect(h.connection.state == .timeWait)
        h.advance(.milliseconds(1))
        #expect(h.connection.state == .closed)
        h.recv([])
    }

    @Test func finWait2StillReceivesData() {
        // Half-close the other way: our side is done, the app keeps sending.
        let h = TCPHarness.established()
        h.connection.shutdownWrite()
        h.poll()
        h.send(fromPeer(rcv, ack: snd + 1, []))
        h.sent.removeAll()
        h.send(fromPeer(rcv, ack: snd + 1, [.psh], payload: bytes(300)))
        #expect(h.read() == bytes(300))
        h.recv([fromUs(snd + 1, ack: rcv + 300, [])])
        #expect(h.connection.state == .finWait2)
    }

    @Test func finAfterBufferedDataGoesLast() {
        let h = TCPHarness.established()
        _ = bytes(1500).withUnsafeBytes { h.connection.write($0) }
        h.connection.shutdownWrite()
        h.poll()
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000)),
                fromUs(snd + 1000, ack: rcv, [.psh, .fin], payload: bytes(500, from: 1000))])
        #expect(h.write(bytes(1)) == 0)
    }

    @Test func finAndItsAckTogetherGoStraightToTimeWait() {
        let h = TCPHarness.established()
        h.connection.shutdownWrite()
        h.poll()
        h.sent.removeAll()
        h.send(fromPeer(rcv, ack: snd + 1, .fin))
        h.recv([fromUs(snd + 1, ack: rcv + 1, [])])
        #expect(h.connection.state == .timeWait)
    }

    @Test func simultaneousCloseGoesThroughClosing() {
        let h = TCPHarness.established()
        h.connection.shutdownWrite()
        h.poll()
        h.recv([fromUs(snd, ack: rcv, .fin)])
        // The peer's FIN crosses ours: it does not acknowledge our FIN.
        h.send(fromPeer(rcv, ack: snd, .fin))
        h.recv([fromUs(snd + 1, ack: rcv + 1, [])])
        #expect(h.connection.state == .closing)
        h.send(fromPeer(rcv + 1, ack: snd + 1, []))
        #expect(h.connection.state == .timeWait)
    }

    @Test func closingRetransmitsItsFin() {
        let h = TCPHarness.established()
        h.connection.shutdownWrite()
        h.poll()
        h.send(fromPeer(rcv, ack: snd, .fin))
        h.sent.removeAll()
        h.advance(.seconds(1))
        h.recv([fromUs(snd, ack: rcv + 1, .fin)])
    }

    @Test func timeWaitAcknowledgesARetransmittedFinAndRestarts() {
        let h = TCPHarness.established()
        h.connection.shutdownWrite()
        h.poll()
        h.send(fromPeer(rcv, ack: snd + 1, .fin))
        h.sent.removeAll()
        h.advance(.seconds(1))
        h.send(fromPeer(rcv, ack: snd + 1, .fin))
        h.recv([fromUs(snd + 1, ack: rcv + 1, [])])
        h.advance(.milliseconds(1999))
        #expect(h.connection.state == .timeWait)
        h.advance(.milliseconds(1))
        #expect(h.connection.state == .closed)
    }

    @Test func timeWaitIgnoresResets() {
        // RFC 1337: no TIME-WAIT assassination.
        let h = TCPHarness.established()
        h.connection.shutdownWrite()
        h.poll()
        h.send(fromPeer(rcv, ack: snd + 1, .fin))
        h.sent.removeAll()
        h.send(fromPeer(rcv + 1, .rst))
        h.recv([])
        #expect(h.connection.state == .timeWait)
    }

    @Test func retransmittedFinInCloseWaitIsAcknowledgedAgain() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, .fin))
        h.sent.removeAll()
        h.send(fromPeer(rcv, ack: snd, .fin))
        h.recv([fromUs(snd, ack: rcv + 1, [])])
        #expect(h.connection.state == .closeWait)
    }

    @Test func dataAfterTheFinIsNotDelivered() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, .fin))
        h.sent.removeAll()
        h.send(fromPeer(rcv + 1, ack: snd, [], payload: bytes(10)))
        #expect(h.connection.readableCount == 0)
    }

    @Test func abortSendsOneResetAndCloses() {
        let h = TCPHarness.established()
        _ = h.write(bytes(10))
        h.sent.removeAll()
        h.connection.abort()
        h.poll()
        h.recv([fromUs(snd + 10, .rst, window: 0)])
        #expect(h.connection.state == .closed)
        h.advance(.seconds(5))
        h.recv([])
    }

    @Test func closedConnectionAnswersWithResets() {
        // RFC 9293 §3.10.7.1.
        let h = TCPHarness.established()
        h.connection.abort()
        h.poll()
        h.sent.removeAll()
        h.send(fromPeer(rcv, ack: snd + 7, [], payload: bytes(3)))
        h.recv([fromUs(snd + 7, .rst, window: 0)])
        h.send(fromPeer(rcv, [.psh], payload: bytes(3)))
        h.recv([fromUs(SequenceNumber(0), ack: rcv + 3, .rst, window: 0)])
        h.send(fromPeer(rcv, .rst))
        h.recv([])
    }

    @Test func resetReplyFollowsRFC9293() {
        let withAck = fromPeer(remoteISS, ack: localISS + 5, [.psh], payload: bytes(4)).header
        #expect(TCPConnection.resetReply(to: withAck, payloadLength: 4) ==
            TCPHeader(sourcePort: localPort, destinationPort: remotePort, sequenceNumber: localISS + 5, flags: .rst, windowSize: 0))
        let syn = fromPeer(remoteISS, .syn).header
        #expect(TCPConnection.resetReply(to: syn, payloadLength: 0) ==
            TCPHeader(sourcePort: localPort, destinationPort: remotePort, sequenceNumber: SequenceNumber(0),
                      acknowledgmentNumber: remoteISS + 1, flags: [.rst, .ack], windowSize: 0))
        #expect(TCPConnection.resetReply(to: fromPeer(remoteISS, .rst).header, payloadLength: 0) == nil)
    }
}
