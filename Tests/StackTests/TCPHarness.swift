import Testing
@testable import Stack
import Wire

/// Packet-level tests in the manner of smoltcp: the test plays the peer,
/// `send` hands the connection a segment, `recv` says exactly which segments
/// came back, and nothing else.
let localPort: UInt16 = 80
let remotePort: UInt16 = 40000
/// Both initial sequence numbers sit just below the wrap, so every test crosses it.
let localISS = SequenceNumber(0xffff_fff0)
let remoteISS = SequenceNumber(0xffff_ff00)

/// A segment with its payload, printed like tcpdump.
struct Segment: Equatable, CustomStringConvertible {
    var header: TCPHeader
    var payload: [UInt8]

    var description: String { header.describe(payloadLength: payload.count) }
}

/// The simplest configuration: no optional TCP options, small buffers, so
/// that window arithmetic in the tests is easy to read.
func plainConfiguration() -> TCPConfiguration {
    var c = TCPConfiguration()
    c.maximumSegmentSize = 1000
    c.receiveBufferSize = 4000
    c.sendBufferSize = 8000
    c.timestamps = false
    c.selectiveAcknowledgments = false
    c.windowScaling = false
    c.idleTimeout = nil
    return c
}

/// A segment from the peer (the app) to us.
func fromPeer(_ sequence: SequenceNumber, ack: SequenceNumber? = nil, _ flags: TCPFlags, window: UInt16 = 64000,
              options: TCPOptions = TCPOptions(), payload: [UInt8] = []) -> Segment {
    var f = flags
    if ack != nil { f.insert(.ack) }
    return Segment(header: TCPHeader(sourcePort: remotePort, destinationPort: localPort, sequenceNumber: sequence,
                                     acknowledgmentNumber: ack ?? SequenceNumber(0), flags: f, windowSize: window,
                                     options: options), payload: payload)
}

/// A segment we expect from the connection.
func fromUs(_ sequence: SequenceNumber, ack: SequenceNumber? = nil, _ flags: TCPFlags, window: UInt16 = 4000,
            options: TCPOptions = TCPOptions(), payload: [UInt8] = []) -> Segment {
    var f = flags
    if ack != nil { f.insert(.ack) }
    return Segment(header: TCPHeader(sourcePort: localPort, destinationPort: remotePort, sequenceNumber: sequence,
                                     acknowledgmentNumber: ack ?? SequenceNumber(0), flags: f, windowSize: window,
                                     options: options), payload: payload)
}

func mssOption(_ mss: UInt16) -> TCPOptions { TCPOptions(maximumSegmentSize: mss) }

/// Bytes 0, 1, 2, … so that any misplaced byte shows.
func bytes(_ count: Int, from start: Int = 0) -> [UInt8] { (start ..< start + count).map { UInt8(truncatingIfNeeded: $0) } }

final class TCPHarness {
    var now = Instant.milliseconds(10_000)
    var connection: TCPConnection!
    var sent: [Segment] = []

    /// A passive connection in SYN-RECEIVED whose SYN-ACK has already been checked.
    static func synReceived(_ configuration: TCPConfiguration = plainConfiguration(), synOptions: TCPOptions = mssOption(1000),
                            sourceLocation: SourceLocation = #_sourceLocation) -> TCPHarness {
        let h = TCPHarness()
        let syn = fromPeer(remoteISS, .syn, options: synOptions)
        h.connection = TCPConnection(acceptingSyn: syn.header, initialSequence: localISS, configuration: configuration, now: h.now)
        h.poll()
        #expect(h.sent.count == 1, sourceLocation: sourceLocation)
        h.sent.removeAll()
        return h
    }

    /// A passive connection in ESTABLISHED with nothing outstanding either way.
    static func established(_ configuration: TCPConfiguration = plainConfiguration(), window: UInt16 = 64000,
                            sourceLocation: SourceLocation = #_sourceLocation) -> TCPHarness {
        let h = synReceived(configuration, sourceLocation: sourceLocation)
        h.send(fromPeer(remoteISS + 1, ack: localISS + 1, [], window: window))
        h.recv([], sourceLocation: sourceLocation)
        #expect(h.connection.state == .established, sourceLocation: sourceLocation)
        _ = h.connection.takeEvents()
        return h
    }

    func send(_ segment: Segment) {
        segment.payload.withUnsafeBytes { connection.receive(segment.header, payload: $0, now: now) }
        poll()
    }

    func poll() {
        connection.output(now: now) { header, payload in sent.append(Segment(header: header, payload: Array(payload))) }
    }

    /// Moves the clock forward and lets due timers fire.
    func advance(_ duration: Duration) {
        now = now + duration
        poll()
    }

    /// The segments sent since the last `recv`, and nothing else.
    func recv(_ expected: [Segment], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(sent == expected, "and nothing else", sourceLocation: sourceLocation)
        sent.removeAll()
    }

    func write(_ data: [UInt8]) -> Int {
        let n = data.withUnsafeBytes { connection.write($0) }
        poll()
        return n
    }

    func read(_ max: Int = 1 << 20) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max)
        let n = buffer.withUnsafeMutableBytes { connection.read(into: $0) }
        poll()
        return Array(buffer.prefix(n))
    }
}
