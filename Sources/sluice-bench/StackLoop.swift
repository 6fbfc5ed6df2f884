import Wire
import Stack

/// Two of our TCP connections move bytes to each other in memory, through
/// real segment bytes (emitted with checksums, parsed back), with no clock
/// and no I/O: the steady-state cost of the stack per segment. Every buffer
/// is allocated before the loop, so valgrind's malloc count over N and 4N
/// segments tells what each segment allocates (tools/bench).
final class StackLoop {
    static let slotSize = 2048
    static let slots = 512

    let client: TCPConnection
    var server: TCPConnection?
    var now = Instant.milliseconds(1)
    // Packets in flight each way: fixed slots and their lengths.
    let toServer: UnsafeMutableRawBufferPointer
    let toClient: UnsafeMutableRawBufferPointer
    var toServerLengths: [Int]
    var toClientLengths: [Int]
    var toServerCount = 0
    var toClientCount = 0
    let source: UnsafeMutableRawBufferPointer
    let sink: UnsafeMutableRawBufferPointer
    var dataSegments = 0
    var bytesDelivered = 0

    static let a = IPv4Address(10, 0, 0, 1), b = IPv4Address(10, 0, 0, 2)

    init() {
        var c = TCPConfiguration()
        c.maximumSegmentSize = 1460
        c.receiveBufferSize = 256 * 1024
        c.sendBufferSize = 256 * 1024
        c.idleTimeout = nil
        client = TCPConnection(connectingFrom: 40000, to: 80, initialSequence: SequenceNumber(0xffff_0000), configuration: c, now: now)
        toServer = .allocate(byteCount: Self.slotSize * Self.slots, alignment: 16)
        toClient = .allocate(byteCount: Self.slotSize * Self.slots, alignment: 16)
        toServerLengths = Array(repeating: 0, count: Self.slots)
        toClientLengths = Array(repeating: 0, count: Self.slots)
        source = .allocate(byteCount: 64 * 1024, alignment: 16)
        for i in 0 ..< source.count { source[i] = UInt8(truncatingIfNeeded: i &* 31) }
        sink = .allocate(byteCount: 256 * 1024, alignment: 16)
        serverConfiguration = c
    }

    let serverConfiguration: TCPConfiguration

    /// Runs until `segments` data segments have crossed; returns the bytes delivered.
    func run(segments: Int) -> Int {
        var rounds = 0
        while dataSegments < segments, rounds < segments * 10 {
            rounds += 1
            now = now + .microseconds(50)
            _ = client.write(UnsafeRawBufferPointer(source))
            // Client → server.
            emit(from: client, into: toServer, lengths: &toServerLengths, count: &toServerCount, src: Self.a, dst: Self.b)
            deliverToServer()
            if let server {
                while true {
                    let n = server.read(into: sink)
                    if n == 0 { break }
                    bytesDelivered &+= n
                }
                emit(from: server, into: toClient, lengths: &toClientLengths, count: &toClientCount, src: Self.b, dst: Self.a)
            }
            deliverToClient()
        }
        return bytesDelivered
    }

    func emit(from connection: TCPConnection, into slots: UnsafeMutableRawBufferPointer, lengths: inout [Int],
                       count: inout Int, src: IPv4Address, dst: IPv4Address) {
        var n = count
        var data = 0
        connection.output(now: now) { header, payload in
            guard n < Self.slots else { return }
            let slot = slots.sub(n * Self.slotSize, Self.slotSize)
            let h = try! header.emit(into: slot, source: src, destination: dst, payload: payload)
            slot.sub(h, payload.count).copyMemory(from: payload)
            lengths[n] = h + payload.count
            n += 1
            if payload.count > 0 { data += 1 }
        }
        count = n
        dataSegments += data
    }

    func deliverToServer() {
        for i in 0 ..< toServerCount {
            let bytes = UnsafeRawBufferPointer(toServer.sub(i * Self.slotSize, toServerLengths[i]))
            guard let view = try? TCPView(bytes), view.isChecksumValid(source: Self.a, destination: Self.b) else { continue }
            let header = TCPHeader(view)
            if server == nil {
                server = TCPConnection(acceptingSyn: header, initialSequence: SequenceNumber(7), configuration: serverConfiguration, now: now)
            } else {
                server!.receive(header, payload: view.payload, now: now)
            }
        }
        toServerCount = 0
    }

    func deliverToClient() {
        for i in 0 ..< toClientCount {
            let bytes = UnsafeRawBufferPointer(toClient.sub(i * Self.slotSize, toClientLengths[i]))
            guard let view = try? TCPView(bytes), view.isChecksumValid(source: Self.b, destination: Self.a) else { continue }
            client.receive(TCPHeader(view), payload: view.payload, now: now)
        }
        toClientCount = 0
    }
}

func stackLoop(_ segments: Int) {
    let loop = StackLoop()
    let delivered = loop.run(segments: segments)
    print("stack-loop: \(loop.dataSegments) data segments, \(delivered) bytes delivered")
}

func benchStack(rounds: Int) {
    let clock = ContinuousClock()
    var times: [Double] = []
    let segments = 100_000
    for _ in 0 ..< rounds {
        let loop = StackLoop()
        _ = loop.run(segments: 2000) // warm up: handshake, windows open
        let start = loop.dataSegments
        let t0 = clock.now
        _ = loop.run(segments: start + segments)
        let t1 = clock.now
        times.append((t1 - t0).nanosecondsDouble / Double(loop.dataSegments - start))
    }
    print("stack benchmark: two connections in memory, 1460-byte segments, \(rounds) rounds of \(segments) (median ns per data segment, both ends, checksums included)")
    print("  send + receive + ACK: \(format1(median(times))) ns  (\(format1(1460 * 8 / median(times))) Gbit/s of payload on one core)")
}
