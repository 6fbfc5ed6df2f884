// sluice-bench: micro-benchmarks of the packet path, run by `make bench`.
//
//   sluice-bench wire [--rounds N]    ns per packet: parse + verify, emit
//   sluice-bench wire-loop N          N iterations of parse, verify and emit,
//                                     untimed, for counting heap allocations
//                                     under valgrind (tools/bench)
//   sluice-bench stack [--rounds N]   ns per data segment between two TCP connections in memory
//   sluice-bench stack-loop N         N data segments, untimed, for valgrind's count
//   sluice-bench rules [--rounds N]   ns per rule evaluation against 10, 10,000 and 100,000 rules
//   sluice-bench rules-loop N         N evaluations against 10,000 rules, untimed, for valgrind's count
//   sluice-bench regex [--rounds N]   ns per URL-regex call, over bytes and through Swift's Regex, and
//                                     per evaluation against ad-blocking lists of 10, 500 and 2,000 lines
//   sluice-bench capture [--rounds N] [--ring BYTES]  ns per packet handed to the pcap recorder (the loop's side)
//   sluice-bench capture-loop N       N packets recorded, untimed, for valgrind's count
//   sluice-bench owners [--rounds N] [--connections N]  µs per owner lookup
//   sluice-bench quic [--rounds N]    µs per QUIC flow whose server name is read from its Initials
//   sluice-bench crypto [--rounds N] [--check]  known answers checked in this build, then µs per
//                                     X25519, P-256 signature and verification, leaf issued,
//                                     TLS handshake, and per 16 KiB record of each suite
//
// Figures are medians over rounds; this machine is noisy, so compare runs
// made together, never absolute numbers from different days.
import Glibc
import Wire

/// A 1500-byte TCP/IPv4 segment with valid checksums, as the kernel would write it.
func makeSegment() -> [UInt8] {
    var packet = [UInt8](repeating: 0, count: 1500)
    let source = IPv4Address(10, 0, 0, 1), destination = IPv4Address(10, 0, 0, 2)
    packet.withUnsafeMutableBytes { buffer in
        let tcp = TCPHeader(sourcePort: 40000, destinationPort: 80, sequenceNumber: SequenceNumber(1000),
                            acknowledgmentNumber: SequenceNumber(2000), flags: [.ack, .psh], windowSize: 501,
                            options: TCPOptions(timestamps: TCPTimestamps(value: 1, echoReply: 2)))
        let payloadStart = 20 + tcp.headerLength
        for i in payloadStart ..< 1500 { buffer[i] = UInt8(truncatingIfNeeded: i &* 7) }
        let payload = UnsafeRawBufferPointer(buffer.sub(payloadStart, 1500 - payloadStart))
        _ = try! tcp.emit(into: buffer.sub(20, tcp.headerLength), source: source, destination: destination, payload: payload)
        let ip = IPv4Header(source: source, destination: destination, protocol: .tcp,
                            payloadLength: 1480, identification: 1)
        _ = try! ip.emit(into: buffer.sub(0, 20))
    }
    return packet
}

@inline(never)
func parseAndVerify(_ packet: UnsafeRawBufferPointer) -> Int {
    guard let ip = try? IPPacketView(packet), ip.upperLayerProtocol == .tcp,
          case let .v4(v4) = ip.network, v4.verifyChecksum(),
          let tcp = try? TCPView(ip.payload),
          tcp.isChecksumValid(source: v4.source, destination: v4.destination) else { return -1 }
    return tcp.payload.count &+ Int(tcp.sequenceNumber.rawValue & 1)
}

@inline(never)
func emit(into buffer: UnsafeMutableRawBufferPointer, payload: UnsafeRawBufferPointer, sequence: UInt32) -> Int {
    let source = IPv4Address(10, 0, 0, 2), destination = IPv4Address(10, 0, 0, 1)
    let tcp = TCPHeader(sourcePort: 80, destinationPort: 40000, sequenceNumber: SequenceNumber(sequence),
                        acknowledgmentNumber: SequenceNumber(1), flags: .ack, windowSize: 1024,
                        options: TCPOptions(timestamps: TCPTimestamps(value: sequence, echoReply: 9)))
    let headerLength = 20 + tcp.headerLength
    // The payload copy is part of emitting: it is the one copy the packet path makes.
    buffer.sub(headerLength, payload.count).copyMemory(from: payload)
    guard let t = try? tcp.emit(into: buffer.sub(20, tcp.headerLength), source: source, destination: destination,
                                 payload: payload) else { return -1 }
    let ip = IPv4Header(source: source, destination: destination, protocol: .tcp,
                        payloadLength: t + payload.count, identification: UInt16(truncatingIfNeeded: sequence))
    guard (try? ip.emit(into: buffer.sub(0, 20))) != nil else { return -1 }
    return 20 + t + payload.count
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

func benchWire(rounds: Int) {
    let packet = makeSegment()
    let payload = [UInt8](repeating: 0x5a, count: 1448)
    var out = [UInt8](repeating: 0, count: 2048)
    let iterations = 200_000
    var parseTimes: [Double] = [], emitTimes: [Double] = []
    var sink = 0
    let clock = ContinuousClock()
    packet.withUnsafeBytes { p in
        precondition(parseAndVerify(p) == 1448, "the benchmark packet must parse and verify")
        payload.withUnsafeBytes { pl in
            out.withUnsafeMutableBytes { o in
                for _ in 0 ..< rounds {
                    let t0 = clock.now
                    for _ in 0 ..< iterations { sink &+= parseAndVerify(p) }
                    let t1 = clock.now
                    for i in 0 ..< iterations { sink &+= emit(into: o, payload: pl, sequence: UInt32(truncatingIfNeeded: i)) }
                    let t2 = clock.now
                    parseTimes.append(Double((t1 - t0).nanosecondsDouble) / Double(iterations))
                    emitTimes.append(Double((t2 - t1).nanosecondsDouble) / Double(iterations))
                }
            }
        }
    }
    print("wire benchmark: 1500-byte TCP/IPv4 segment, \(rounds) rounds of \(iterations) packets (median ns/packet)")
    print("  parse + verify IPv4 and TCP checksums: \(format1(median(parseTimes))) ns  (\(format1(1448 * 8 / median(parseTimes))) Gbit/s of payload)")
    print("  emit IPv4 + TCP headers, copy payload, checksums: \(format1(median(emitTimes))) ns")
    if sink == 42 { print("") } // keeps the work observable
}

func format1(_ x: Double) -> String {
    let tenths = Int(x * 10 + 0.5)
    return "\(tenths / 10).\(tenths % 10)"
}

extension Duration {
    var nanosecondsDouble: Double {
        let (s, atto) = components
        return Double(s) * 1e9 + Double(atto) / 1e9
    }
}

func wireLoop(_ n: Int) {
    let packet = makeSegment()
    let payload = [UInt8](repeating: 0x5a, count: 1448)
    var out = [UInt8](repeating: 0, count: 2048)
    var sink = 0
    packet.withUnsafeBytes { p in
        payload.withUnsafeBytes { pl in
            out.withUnsafeMutableBytes { o in
                for i in 0 ..< n {
                    sink &+= parseAndVerify(p)
                    sink &+= emit(into: o, payload: pl, sequence: UInt32(truncatingIfNeeded: i))
                }
            }
        }
    }
    print("wire-loop: \(n) iterations, checksum \(sink)")
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "wire":
    var rounds = 7
    if let i = arguments.firstIndex(of: "--rounds"), i + 1 < arguments.count, let n = Int(arguments[i + 1]) { rounds = max(1, n) }
    benchWire(rounds: rounds)
case "wire-loop":
    wireLoop(arguments.count > 1 ? Int(arguments[1]) ?? 1000 : 1000)
case "stack":
    var rounds = 5
    if let i = arguments.firstIndex(of: "--rounds"), i + 1 < arguments.count, let n = Int(arguments[i + 1]) { rounds = max(1, n) }
    benchStack(rounds: rounds)
case "stack-loop":
    stackLoop(arguments.count > 1 ? Int(arguments[1]) ?? 1000 : 1000)
case "rules":
    var rounds = 5
    if let i = arguments.firstIndex(of: "--rounds"), i + 1 < arguments.count, let n = Int(arguments[i + 1]) { rounds = max(1, n) }
    benchRules(rounds: rounds)
case "rules-loop":
    rulesLoop(arguments.count > 1 ? Int(arguments[1]) ?? 1000 : 1000)
case "regex":
    var rounds = 5
    if let i = arguments.firstIndex(of: "--rounds"), i + 1 < arguments.count, let n = Int(arguments[i + 1]) { rounds = max(1, n) }
    benchRegexes(rounds: rounds)
case "capture":
    var rounds = 5
    if let i = arguments.firstIndex(of: "--rounds"), i + 1 < arguments.count, let n = Int(arguments[i + 1]) { rounds = max(1, n) }
    var ring = 16 << 20
    if let i = arguments.firstIndex(of: "--ring"), i + 1 < arguments.count, let n = Int(arguments[i + 1]) { ring = max(1 << 17, n) }
    benchCapture(rounds: rounds, ringCapacity: ring)
case "owners":
    var rounds = 5, connections = 256
    if let i = arguments.firstIndex(of: "--rounds"), i + 1 < arguments.count, let n = Int(arguments[i + 1]) { rounds = max(1, n) }
    if let i = arguments.firstIndex(of: "--connections"), i + 1 < arguments.count, let n = Int(arguments[i + 1]) { connections = max(16, n) }
    benchOwners(rounds: rounds, connections: connections)
case "quic":
    var rounds = 5
    if let i = arguments.firstIndex(of: "--rounds"), i + 1 < arguments.count, let n = Int(arguments[i + 1]) { rounds = max(1, n) }
    benchQUIC(rounds: rounds)
case "crypto":
    enableCryptoAcceleration()
    print("Known answers in this build:")
    guard checkCryptoKnownAnswers() else { print("crypto: a known answer differs in this build"); exit(1) }
    if arguments.contains("--check") { break }
    var rounds = 5
    if let i = arguments.firstIndex(of: "--rounds"), i + 1 < arguments.count, let n = Int(arguments[i + 1]) { rounds = max(1, n) }
    benchCrypto(rounds: rounds)
case "capture-loop":
    captureLoop(arguments.count > 1 ? Int(arguments[1]) ?? 1000 : 1000)
default:
    print("usage: sluice-bench wire [--rounds N] | wire-loop N | stack [--rounds N] | stack-loop N | rules [--rounds N] | rules-loop N | regex [--rounds N] | capture [--rounds N] [--ring BYTES] | capture-loop N | owners [--rounds N] [--connections N] | quic [--rounds N] | crypto [--rounds N] [--check]")
}
