// fuzz-sources: Sources/Wire Sources/Stack
// fuzz-corpus: stack
// libFuzzer harness for the TCP stack as the engine drives it: the input is a
// script of app segments (valid checksums, sequence numbers near the
// connection's own so that deep states are reached), engine writes, reads,
// closes and the clock, plus raw datagrams for the UDP/ICMP table and the
// fragment reassembler; replay's passive reassembler (PassiveTCPTable)
// watches every packet both ways. Whatever the script, nothing traps, every packet the
// stack emits parses with a valid checksum, and both byte streams arrive
// intact: every data byte we send is the byte the engine wrote at that stream
// offset, and the engine reads exactly the bytes the app sent, in order.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStack(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var script = Script(bytes: UnsafeRawBufferPointer(start: data, count: size))
    var driver = Driver(configurationByte: script.byte())
    var steps = 0
    while !script.isEmpty, steps < 400 {
        driver.step(&script)
        steps += 1
    }
    return 0
}

/// The fuzz input, read a field at a time (zeros once it runs out).
struct Script {
    let bytes: UnsafeRawBufferPointer
    var offset = 0
    var isEmpty: Bool { offset >= bytes.count }
    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }
    mutating func u16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }
    mutating func take(_ n: Int) -> UnsafeRawBufferPointer {
        let k = min(n, bytes.count - offset)
        defer { offset += k }
        return UnsafeRawBufferPointer(rebasing: bytes[offset ..< offset + k])
    }
}

/// The byte at `offset` of a stream: every position has its own value, so a
/// misplaced byte shows. `salt` tells the two directions and the flows apart.
func streamByte(_ offset: Int, salt: Int) -> UInt8 {
    UInt8(truncatingIfNeeded: (offset &* 131) ^ (offset >> 8) &+ salt)
}

/// What the harness knows of one flow: the app's side of it.
struct AppSide {
    let key: FlowKey
    let salt: Int
    var initialSequence: SequenceNumber
    var sent = 0          // app bytes handed to the stack at the highest offset so far
    var engineWrote = 0   // bytes the engine wrote into the connection
    var engineRead = 0    // bytes the engine read out of it
    var writeClosed = false
}

/// Checks every emitted packet and the data in it.
struct CheckingSink: PacketSink {
    var flows: [FlowKey: AppSide] = [:]
    var connections: [FlowKey: TCPConnection] = [:]
    /// Replay's reassembler watches both directions, as it would a capture of them.
    let passive = PassiveTCPTable()
    var now = Instant.zero

    func watch(_ packet: IPPacketView) {
        passive.receive(packet, at: now) { event in
            switch event {
            case let .opened(connection), let .gap(connection, _, _), let .ended(connection, _):
                _ = connection.description
            case let .data(_, _, bytes):
                precondition(!bytes.isEmpty, "an empty data event")
            }
        }
    }
    mutating func send(capacity: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Int) {
        withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 16) { buffer in
            let n = fill(buffer)
            precondition(n >= 0 && n <= capacity, "a packet longer than its buffer")
            guard n > 0 else { return }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<n])
            guard let packet = try? IPPacketView(bytes) else { preconditionFailure("the stack emitted an unparsable packet") }
            _ = packet.description
            precondition(packet.verifyUpperLayerChecksum() != false, "the stack emitted a bad checksum: \(packet)")
            watch(packet)
            guard packet.upperLayerProtocol == .tcp, let tcp = try? TCPView(packet.payload) else { return }
            let header = TCPHeader(tcp)
            // Our data, in the app's direction: the key is the reverse of the packet's.
            let key = FlowKey(transport: .tcp, appAddress: packet.destination, appPort: header.destinationPort,
                              destinationAddress: packet.source, destinationPort: header.sourcePort)
            guard let side = flows[key], let connection = connections[key], !tcp.payload.isEmpty else { return }
            var offset = header.sequenceNumber - (connection.initialSendSequence + 1)
            if header.flags.contains(.syn) { offset += 1 }
            precondition(offset >= 0 && offset + tcp.payload.count <= side.engineWrote,
                         "sent bytes the engine never wrote: offset \(offset) length \(tcp.payload.count) of \(side.engineWrote)")
            for (i, byte) in tcp.payload.enumerated() {
                precondition(byte == streamByte(offset + i, salt: side.salt), "byte \(offset + i) of our stream is wrong")
            }
        }
    }
}

struct Driver {
    let table: TCPFlowTable
    let datagrams = DatagramFlowTable()
    let fragments = FragmentReassembler()
    var sink = CheckingSink()
    var now = Instant.milliseconds(1000)
    let app = IPAddress.v4(IPv4Address(10, 0, 0, 2))
    let server = IPAddress.v4(IPv4Address(10, 0, 0, 9))

    init(configurationByte: UInt8) {
        var c = TCPFlowTable.Configuration()
        c.tcp.maximumSegmentSize = 536 + Int(configurationByte & 0x3) * 500
        c.tcp.receiveBufferSize = 4096 << Int((configurationByte >> 2) & 0x3)
        c.tcp.sendBufferSize = 4096 << Int((configurationByte >> 4) & 0x3)
        c.tcp.timestamps = configurationByte & 0x40 != 0
        c.tcp.selectiveAcknowledgments = configurationByte & 0x80 != 0
        c.maximumFlows = 8
        table = TCPFlowTable(configuration: c)
        sink.now = now
    }

    func key(_ index: UInt8) -> FlowKey {
        FlowKey(transport: .tcp, appAddress: app, appPort: 40000 + UInt16(index & 1), destinationAddress: server, destinationPort: 80)
    }

    mutating func step(_ script: inout Script) {
        let op = script.byte()
        let key = key(op >> 7)
        switch op & 0x0f {
        case 0, 1, 2, 3, 4:
            appSegment(key, &script)
        case 5:
            // The engine's decision on a pending SYN.
            if script.byte() & 3 == 0 {
                table.refuse(key, with: .reset, sink: &sink)
            } else if let connection = table.accept(key, now: now, sink: &sink) {
                sink.connections[key] = connection
            }
        case 6:
            // The engine writes upstream bytes into the connection (the send ring).
            guard let connection = table.connection(key), var side = sink.flows[key] else { return }
            let n = Int(script.u16() % 9000)
            let chunk = (0 ..< n).map { streamByte(side.engineWrote + $0, salt: side.salt) }
            let taken = chunk.withUnsafeBytes { connection.write($0) }
            precondition(taken >= 0 && taken <= n)
            side.engineWrote += taken
            sink.flows[key] = side
            table.flush(key, now: now, sink: &sink)
        case 7:
            // The engine drains what the app sent: it must be the app's stream, in order.
            guard let connection = table.connection(key), var side = sink.flows[key] else { return }
            let n = Int(script.u16() % 9000)
            if script.byte() & 1 == 0 {
                let piece = connection.peekReadable(maxLength: n)
                for (i, byte) in piece.enumerated() {
                    precondition(byte == streamByte(side.engineRead + i, salt: side.salt &+ 1), "app byte \(side.engineRead + i) read wrong")
                }
                connection.consume(piece.count)
                side.engineRead += piece.count
            } else {
                var out = [UInt8](repeating: 0, count: n)
                let got = out.withUnsafeMutableBytes { connection.read(into: $0) }
                for i in 0 ..< got {
                    precondition(out[i] == streamByte(side.engineRead + i, salt: side.salt &+ 1), "app byte \(side.engineRead + i) read wrong")
                }
                side.engineRead += got
            }
            sink.flows[key] = side
            table.flush(key, now: now, sink: &sink)
        case 8:
            guard let connection = table.connection(key) else { return }
            switch script.byte() % 3 {
            case 0: connection.shutdownWrite()
            case 1: connection.abort()
            default: connection.abortSilently()
            }
            table.flush(key, now: now, sink: &sink)
        case 9, 10:
            // Time passes; timers fire.
            now = now + .milliseconds(Int64(script.u16()))
            sink.now = now
            for closed in table.poll(now: now, sink: &sink) { forget(closed.key) }
            _ = datagrams.expire(now: now)
            _ = fragments.expire(now: now)
        case 11:
            for closed in table.poll(now: now, sink: &sink) { forget(closed.key) }
            if script.byte() & 7 == 0 { sink.passive.finish { _ in } }
            if let connection = table.connection(key) {
                _ = connection.takeEvents()
                _ = connection.description
                _ = connection.nextDeadline
            }
        case 12, 13:
            rawDatagram(&script)
        default:
            // The engine forgets a flow outright (its upstream went away).
            table.remove(key)
            forget(key)
        }
    }

    mutating func forget(_ key: FlowKey) {
        sink.flows[key] = nil
        sink.connections[key] = nil
    }

    /// One segment from the app, with sequence numbers near the flow's own.
    mutating func appSegment(_ key: FlowKey, _ script: inout Script) {
        var flags = TCPFlags(rawValue: script.byte())
        let sequenceDelta = Int(Int16(bitPattern: script.u16())) / 4
        let ackDelta = Int(Int16(bitPattern: script.u16())) / 4
        let window = script.u16()
        let length = Int(script.u16() % 3000)
        let optionByte = script.byte()
        let connection = table.connection(key)
        let isSyn = flags.contains(.syn) && !flags.contains(.ack)
        // A flow the harness does not know yet still gets its segment (the
        // table answers strays with a RST); its stream starts at the SYN.
        let side = sink.flows[key] ?? AppSide(key: key, salt: Int(key.appPort), initialSequence: SequenceNumber(UInt32(script.u16()) << 16 | 0x1234))
        let base = connection?.receiveNext ?? side.initialSequence
        let sequence = base + sequenceDelta
        let acknowledgment = (connection.map { $0.sendUnacknowledged } ?? SequenceNumber(0)) + ackDelta
        if ackDelta != 0 || connection != nil { flags.insert(.ack) }
        var options = TCPOptions()
        if optionByte & 1 != 0 { options.maximumSegmentSize = 200 + UInt16(optionByte) * 8 }
        if optionByte & 2 != 0 { options.windowScale = optionByte >> 4 }
        if optionByte & 4 != 0 { options.sackPermitted = true }
        if optionByte & 8 != 0 { options.timestamps = TCPTimestamps(value: UInt32(now.nanoseconds / 1_000_000), echoReply: UInt32(optionByte)) }
        if optionByte & 0x30 == 0x30, let connection {
            let left = connection.sendUnacknowledged + Int(optionByte & 0x0f) * 100
            options.sackBlocks = TCPSackBlocks([TCPSackBlock(left: left, right: left + 500)])
        }
        // The payload is the app's stream at the segment's offset: a
        // retransmission repeats the same bytes, as a real app's would.
        // A SYN's data starts one past its sequence number; so does a new flow's stream.
        let streamStart = isSyn && connection == nil ? sequence : side.initialSequence
        let streamOffset = sequence + (flags.contains(.syn) ? 1 : 0) - (streamStart + 1)
        let payload = (0 ..< length).map { streamByte(streamOffset + $0, salt: side.salt &+ 1) }
        let header = TCPHeader(sourcePort: key.appPort, destinationPort: key.destinationPort, sequenceNumber: sequence,
                               acknowledgmentNumber: acknowledgment, flags: flags, windowSize: window, options: options)
        withUnsafeTemporaryAllocation(byteCount: 60 + 60 + length, alignment: 16) { buffer in
            let n = payload.withUnsafeBytes {
                IPFraming.writeTCP(into: buffer, source: key.appAddress, destination: key.destinationAddress,
                                   header: header, payload: $0, identification: 0)
            }
            guard n > 0, let packet = try? IPPacketView(UnsafeRawBufferPointer(rebasing: buffer[..<n])) else { return }
            sink.watch(packet)
            let input = table.input(packet, now: now, sink: &sink)
            // SYNs that gave way in a full pending queue: as the engine, nothing more of them.
            _ = table.takeEvictedPending()
            switch input {
            case let .segment(k):
                if let c = table.connection(k), c.state == .closed { forget(k) }
            case let .connectionRequest(k):
                // A new flow, or a new SYN that replaced one in TIME-WAIT: both streams start over.
                sink.flows[k] = AppSide(key: k, salt: side.salt, initialSequence: sequence)
                sink.connections[k] = nil
            case .answered, .refusedFull, .dropped:
                break
            }
        }
        if let connection = table.connection(key) {
            if connection.immediateAckRequired { table.flush(key, connection: connection, now: now, sink: &sink) }
            sink.connections[key] = connection
        } else {
            sink.connections[key] = nil
        }
    }

    /// Raw bytes as a datagram: the UDP/ICMP table and the fragment
    /// reassembler (a reassembled TCP datagram goes to the TCP table).
    mutating func rawDatagram(_ script: inout Script) {
        let length = Int(script.byte()) * 8
        let raw = script.take(length)
        guard let packet = try? IPPacketView(raw) else { return }
        _ = packet.description
        sink.watch(packet)
        if packet.isFragment {
            switch fragments.insert(packet, now: now) {
            case let .complete(datagram):
                datagram.withPacket { whole in
                    if whole.upperLayerProtocol == .tcp { _ = table.input(whole, now: now, sink: &sink) } else { _ = datagrams.input(whole, now: now, sink: &sink) }
                }
            case .notAFragment, .incomplete, .dropped:
                break
            }
            return
        }
        let input = datagrams.input(packet, now: now, sink: &sink)
        _ = datagrams.takeEvicted()
        switch input {
        case let .udp(key, payload, _):
            datagrams.sendUDP(key, payload: payload, now: now, sink: &sink)
        case let .echoRequest(key, sequenceNumber, payload, _):
            datagrams.sendEchoReply(key, sequenceNumber: sequenceNumber, payload: payload, now: now, sink: &sink)
            _ = datagrams.echoFlow(destination: key.destinationAddress, identifier: key.appPort, transport: key.transport)
        case .dropped, .appPortUnreachable:
            break
        }
    }
}
