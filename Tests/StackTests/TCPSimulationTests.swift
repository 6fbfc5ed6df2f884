import Testing
@testable import Stack
import Wire

/// Two of our TCP connections talk through seeded fault injectors, one per
/// direction, on a virtual clock. Every segment is emitted to bytes with a
/// real checksum and parsed back, so corruption is caught where it would be
/// in production. Each transfer must arrive byte-exact, both ways, and both
/// ends must finish closing, within bounded steps and virtual time.
struct Simulation {
    static let clientAddress = IPv4Address(10, 0, 0, 1)
    static let serverAddress = IPv4Address(10, 0, 0, 2)

    var now = Instant.milliseconds(1)
    var client: TCPConnection
    var server: TCPConnection?
    var toServer: FaultInjector
    var toClient: FaultInjector
    let configuration: TCPConfiguration
    var badChecksums = 0
    /// The server's data segments shorter than its MSS that did not end what it had written (no PSH).
    var serverRunts: [(sequence: SequenceNumber, length: Int)] = []
    /// The client's ACK for a segment that needs one at once (out of order,
    /// a duplicate) goes before the next segment is read, as the engine
    /// sends it (`immediateAckRequired`), instead of once per delivery.
    var clientAcknowledgesEachSegment = false
    static let serverInitialSequence = SequenceNumber(0xffff_f000)

    init(plan: FaultInjector.Plan, seed: UInt64, configuration: TCPConfiguration) {
        self.configuration = configuration
        toServer = FaultInjector(plan: plan, seed: seed)
        toClient = FaultInjector(plan: plan, seed: seed ^ 0x5555_5555)
        client = TCPConnection(connectingFrom: 40000, to: 80, initialSequence: SequenceNumber(UInt32(truncatingIfNeeded: seed &* 2_654_435_761)),
                               configuration: configuration, now: now, timestampOffset: 1000)
    }

    static func encode(_ header: TCPHeader, _ payload: UnsafeRawBufferPointer, from: IPv4Address, to: IPv4Address) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: header.headerLength + payload.count)
        bytes.withUnsafeMutableBytes { out in
            let n = try! header.emit(into: out, source: from, destination: to, payload: payload)
            UnsafeMutableRawBufferPointer(rebasing: out[n...]).copyMemory(from: payload)
        }
        return bytes
    }

    /// The client's segments, onto the link to the server.
    mutating func flushClient() {
        let t = now
        var toS: [[UInt8]] = []
        client.output(now: t) { h, p in toS.append(Simulation.encode(h, p, from: Simulation.clientAddress, to: Simulation.serverAddress)) }
        for p in toS { toServer.push(p, now: t) }
    }

    mutating func flush() {
        flushClient()
        let t = now
        var toC: [[UInt8]] = []
        let segmentSize = server?.sendMaximumSegmentSize ?? 0
        server?.output(now: t) { h, p in
            if p.count > 0, p.count < segmentSize, !h.flags.contains(.psh) { serverRunts.append((h.sequenceNumber, p.count)) }
            toC.append(Simulation.encode(h, p, from: Simulation.serverAddress, to: Simulation.clientAddress))
        }
        for p in toC { toClient.push(p, now: t) }
    }

    mutating func deliver() {
        for packet in toServer.pop(now: now) {
            packet.withUnsafeBytes { raw in
                guard let view = try? TCPView(raw), view.isChecksumValid(source: Simulation.clientAddress, destination: Simulation.serverAddress) else {
                    badChecksums += 1
                    return
                }
                let header = TCPHeader(view)
                if server == nil {
                    // The flow table's job: only a SYN creates a connection.
                    guard header.flags == .syn else { return }
                    server = TCPConnection(acceptingSyn: header, initialSequence: Simulation.serverInitialSequence,
                                           configuration: configuration, now: now, timestampOffset: 77)
                    return
                }
                server!.receive(header, payload: view.payload, now: now)
            }
        }
        for packet in toClient.pop(now: now) {
            packet.withUnsafeBytes { raw in
                guard let view = try? TCPView(raw), view.isChecksumValid(source: Simulation.serverAddress, destination: Simulation.clientAddress) else {
                    badChecksums += 1
                    return
                }
                client.receive(TCPHeader(view), payload: view.payload, now: now)
            }
            if clientAcknowledgesEachSegment, client.immediateAckRequired { flushClient() }
        }
    }

    /// Advances the virtual clock to the next thing that can happen.
    mutating func step(maximum: Duration) {
        var next = now + maximum
        for candidate in [toServer.nextRelease, toClient.nextRelease, client.nextDeadline, server?.nextDeadline] {
            if let c = candidate, c < next { next = c }
        }
        now = max(next, now + .microseconds(1))
    }
}

/// Moves bytes from a source array into a connection and from it into a sink.
struct Pump {
    var toSend: [UInt8]
    var sent = 0
    var received: [UInt8] = []
    var closedWrite = false

    mutating func run(on connection: TCPConnection) {
        if sent < toSend.count {
            sent += toSend.withUnsafeBytes { connection.write(UnsafeRawBufferPointer(rebasing: $0[sent...])) }
        }
        if sent == toSend.count, !closedWrite, connection.state == .established || connection.state == .closeWait {
            connection.shutdownWrite()
            closedWrite = true
        }
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let n = buffer.withUnsafeMutableBytes { connection.read(into: $0) }
            if n == 0 { break }
            received += buffer.prefix(n)
        }
    }
}

@Suite struct TCPSimulationTests {
    func transfer(seed: UInt64, plan: FaultInjector.Plan, clientBytes: Int, serverBytes: Int,
                  configuration: TCPConfiguration) -> (ok: Bool, detail: String) {
        var rng = SplitMix64(seed: seed)
        let up = (0 ..< clientBytes).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let down = (0 ..< serverBytes).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        var sim = Simulation(plan: plan, seed: seed, configuration: configuration)
        var clientPump = Pump(toSend: up)
        var serverPump = Pump(toSend: down)
        var steps = 0
        let deadline = Instant.milliseconds(600_000)
        func done(_ c: TCPConnection?) -> Bool { c.map { $0.state == .closed || $0.state == .timeWait } ?? false }
        while steps < 400_000, sim.now < deadline {
            steps += 1
            sim.deliver()
            clientPump.run(on: sim.client)
            if let server = sim.server { serverPump.run(on: server) }
            sim.flush()
            if done(sim.client), done(sim.server), sim.toServer.isEmpty, sim.toClient.isEmpty { break }
            sim.step(maximum: .milliseconds(50))
        }
        let ok = clientPump.received == down && serverPump.received == up && done(sim.client) && done(sim.server)
        let detail = "seed \(seed) \(plan): steps \(steps), t \(sim.now), up \(serverPump.received.count)/\(up.count), down \(clientPump.received.count)/\(down.count), client \(sim.client), server \(sim.server.map { "\($0)" } ?? "none"), bad checksums \(sim.badChecksums), faults \(sim.toServer.counters) \(sim.toClient.counters)"
        return (ok, detail)
    }

    func configuration(timestamps: Bool, sack: Bool) -> TCPConfiguration {
        var c = TCPConfiguration()
        c.maximumSegmentSize = 1400
        c.receiveBufferSize = 64 * 1024
        c.sendBufferSize = 64 * 1024
        c.timestamps = timestamps
        c.selectiveAcknowledgments = sack
        return c
    }

    @Test(arguments: Array(1 ... 8) as [UInt64])
    func cleanTransfersBothWays(seed: UInt64) {
        let result = transfer(seed: seed, plan: FaultInjector.Plan(delay: .milliseconds(1)),
                              clientBytes: 300_000, serverBytes: 200_000, configuration: configuration(timestamps: seed % 2 == 0, sack: true))
        #expect(result.ok, "\(result.detail)")
    }

    @Test(arguments: Array(1 ... 24) as [UInt64])
    func lossyTransfersArriveByteExact(seed: UInt64) {
        let plan = FaultInjector.Plan(drop: 0.02, duplicate: 0.01, reorder: 0.02, corrupt: 0.01, delay: .milliseconds(1))
        let result = transfer(seed: seed, plan: plan, clientBytes: 150_000, serverBytes: 100_000,
                              configuration: configuration(timestamps: seed % 2 == 0, sack: seed % 3 != 0))
        #expect(result.ok, "\(result.detail)")
    }

    @Test(arguments: [101, 102, 103] as [UInt64])
    func heavyLossStillCompletes(seed: UInt64) {
        let plan = FaultInjector.Plan(drop: 0.10, duplicate: 0.05, reorder: 0.10, corrupt: 0.05, delay: .milliseconds(2))
        let result = transfer(seed: seed, plan: plan, clientBytes: 40_000, serverBytes: 40_000,
                              configuration: configuration(timestamps: true, sack: true))
        #expect(result.ok, "\(result.detail)")
    }

    /// `size` seeded bytes from the server to the client, within a minute of
    /// virtual time; whether they arrived byte-exact.
    func download(_ size: Int, plan: FaultInjector.Plan, seed: UInt64, configuration: TCPConfiguration,
                  acknowledgeEachSegment: Bool = false, observe: (Simulation) -> Void = { _ in }) -> (Simulation, Bool) {
        var rng = SplitMix64(seed: seed)
        let down = (0 ..< size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        var sim = Simulation(plan: plan, seed: seed, configuration: configuration)
        sim.clientAcknowledgesEachSegment = acknowledgeEachSegment
        var clientPump = Pump(toSend: [])
        var serverPump = Pump(toSend: down)
        var steps = 0
        while steps < 1_000_000, clientPump.received.count < down.count, sim.now < Instant.milliseconds(60_000) {
            steps += 1
            sim.deliver()
            clientPump.run(on: sim.client)
            if let server = sim.server { serverPump.run(on: server) }
            sim.flush()
            observe(sim)
            sim.step(maximum: .milliseconds(50))
        }
        return (sim, clientPump.received == down)
    }

    /// A download through a lossy, slightly reordering path with a round trip
    /// of 60 µs, as between an app and Sluice: loss must be repaired by
    /// RACK and tail loss probes, not by the 200 ms retransmission timer.
    /// (Before RACK these six downloads waited for it 11 times, 2.8 s of
    /// virtual time in all; with it, none, 133 ms.)
    @Test func lossIsRepairedWithoutWaitingForTheTimer() {
        var configuration = TCPConfiguration()
        configuration.maximumSegmentSize = 1460
        let plan = FaultInjector.Plan(drop: 0.02, duplicate: 0.01, reorder: 0.02, delay: .microseconds(30),
                                      reorderDelay: .microseconds(300))
        var timeouts = 0
        var details: [String] = []
        for seed in UInt64(1) ... 6 {
            let (sim, arrived) = download(2_000_000, plan: plan, seed: seed, configuration: configuration)
            #expect(arrived, "seed \(seed)")
            let counters = sim.server?.counters ?? TCPConnection.Counters()
            timeouts += counters.retransmissionTimeouts
            details.append("seed \(seed): \(sim.now) \(counters)")
        }
        #expect(timeouts <= 3, "\(details.joined(separator: "\n"))")
    }

    /// `rate=`: a link sends one packet after another, each taking its
    /// transmission time (here 1 µs a byte), and holds at most 200 ms of them.
    @Test func aRateLimitedLinkSendsPacketsOneAfterAnotherFromABoundedQueue() {
        var link = FaultInjector(plan: FaultInjector.Plan(delay: .milliseconds(1), bitsPerSecond: 8_000_000), seed: 1)
        for i in 0 ..< 3 { link.push([UInt8](repeating: UInt8(i), count: 1000), now: .zero) }
        #expect(link.nextRelease == .milliseconds(2))
        #expect(link.pop(now: Instant(nanoseconds: 1_999_999)).isEmpty)
        #expect(link.pop(now: .milliseconds(2)).map { $0[0] } == [0])
        #expect(link.pop(now: .milliseconds(4)).map { $0[0] } == [1, 2])
        // Idle again: the next packet only takes its own time.
        link.push([9], now: .milliseconds(10))
        #expect(link.nextRelease == Instant(nanoseconds: 11_000_000 + 1_000))
        var full = FaultInjector(plan: FaultInjector.Plan(bitsPerSecond: 8_000_000), seed: 1)
        for _ in 0 ..< 250 { full.push([UInt8](repeating: 0, count: 1000), now: .zero) }
        // The k-th packet starts after k ms of waiting; 0 through 200 ms are in the queue.
        #expect(full.counters.passed == 201 && full.counters.overflowed == 49)
    }

    /// Our TCP through a 16 Mbit/s link each way, 10 ms away: the download
    /// arrives byte-exact, no faster than the link allows, and not much slower.
    @Test func aTransferFillsARateLimitedLink() {
        let plan = FaultInjector.Plan(delay: .milliseconds(5), bitsPerSecond: 16_000_000)
        var configuration = TCPConfiguration()
        configuration.maximumSegmentSize = 1460
        let size = 1_000_000
        let (sim, arrived) = download(size, plan: plan, seed: 3, configuration: configuration)
        #expect(arrived)
        let seconds = Double(sim.now.nanoseconds) / 1e9
        let floor = Double(size) * 8 / 16_000_000   // the payload alone, 0.5 s
        #expect(seconds >= floor && seconds < floor * 2, "\(seconds) s, \(sim.server?.counters ?? TCPConnection.Counters()), link \(sim.toClient.counters)")
    }

    @Test func theInjectorIsReproducible() {
        let plan = FaultInjector.Plan(drop: 0.2, duplicate: 0.2, reorder: 0.2, corrupt: 0.2, delay: .milliseconds(1))
        func run() -> [[UInt8]] {
            var f = FaultInjector(plan: plan, seed: 42)
            for i in 0 ..< 200 { f.push([UInt8(i), 1, 2, 3], now: .milliseconds(Int64(i))) }
            return f.pop(now: .milliseconds(1000))
        }
        #expect(run() == run())
        var f = FaultInjector(plan: plan, seed: 42)
        for i in 0 ..< 1000 { f.push([UInt8(truncatingIfNeeded: i)], now: .zero) }
        // Each fault happens at roughly its rate.
        #expect((150 ... 250).contains(f.counters.dropped))
        #expect((100 ... 220).contains(f.counters.duplicated))
    }

    /// HyStart++ (RFC 9406) through a slow link with a bottleneck queue
    /// (`--faults rate=`): slow start leaves for CSS while the queue fills,
    /// before it overflows, so the download loses a fraction of what slow
    /// start running to the first loss loses, and takes no longer.
    @Test(arguments: [(16_000_000, 20), (100_000_000, 5)])
    func hyStartLeavesSlowStartBeforeTheQueueOverflows(bitsPerSecond: Int, oneWayMilliseconds: Int64) {
        var plan = FaultInjector.Plan(delay: .milliseconds(oneWayMilliseconds), bitsPerSecond: bitsPerSecond)
        plan.queueLimit = .milliseconds(100)
        func run(hyStart: Bool) -> (sim: Simulation, arrived: Bool, cssAt: Instant?, firstOverflowAt: Instant?) {
            var configuration = TCPConfiguration()
            configuration.maximumSegmentSize = 1460
            // A window larger than the link's delay and queue together, so that only the queue limits it.
            configuration.receiveBufferSize = 4 << 20
            configuration.sendBufferSize = 4 << 20
            configuration.hyStart = hyStart
            var cssAt: Instant?
            var firstOverflowAt: Instant?
            let (sim, arrived) = download(4_000_000, plan: plan, seed: 3, configuration: configuration) { sim in
                if cssAt == nil, case .conservative? = sim.server?.congestion.hyStart?.phase { cssAt = sim.now }
                if firstOverflowAt == nil, sim.toClient.counters.overflowed > 0 { firstOverflowAt = sim.now }
            }
            return (sim, arrived, cssAt, firstOverflowAt)
        }
        let with = run(hyStart: true)
        let without = run(hyStart: false)
        let detail = "with: \(with.sim.now) \(with.sim.toClient.counters) \(with.sim.server?.counters ?? .init()), CSS at \(with.cssAt.map { "\($0)" } ?? "never"), first overflow \(with.firstOverflowAt.map { "\($0)" } ?? "never"); without: \(without.sim.now) \(without.sim.toClient.counters) \(without.sim.server?.counters ?? .init())"
        #expect(with.arrived && without.arrived, "\(detail)")
        let cssBeforeOverflow = with.cssAt.map { css in with.firstOverflowAt.map { css < $0 } ?? true } ?? false
        #expect(cssBeforeOverflow, "\(detail)")
        #expect(with.sim.toClient.counters.overflowed * 4 < without.sim.toClient.counters.overflowed, "\(detail)")
        #expect(with.sim.now.nanoseconds <= without.sim.now.nanoseconds + without.sim.now.nanoseconds / 20, "\(detail)")
    }

    /// A congestion window that grew by part of a segment does not send that
    /// part alone while data is in flight (RFC 9293 §3.8.6.2.1): CUBIC grows
    /// it by bytes an ACK, HyStart++'s CSS by a quarter segment. Until 2026-12-07 every such ACK sent a full
    /// segment and a runt (8,152 of them in this download).
    @Test func aCongestionWindowGrownByPartOfASegmentSendsNoRunts() {
        var plan = FaultInjector.Plan(delay: .milliseconds(20), bitsPerSecond: 16_000_000)
        plan.queueLimit = .milliseconds(100)
        var configuration = TCPConfiguration()
        configuration.maximumSegmentSize = 1460
        configuration.receiveBufferSize = 4 << 20
        configuration.sendBufferSize = 4 << 20
        let (sim, arrived) = download(4_000_000, plan: plan, seed: 3, configuration: configuration)
        #expect(arrived)
        // The download's last bytes are short of a segment: sent again, they are not runts.
        let end = Simulation.serverInitialSequence + 1 + 4_000_000
        let runts = sim.serverRunts.filter { $0.sequence + $0.length != end }
        #expect(runts.count == 0, "\(runts.count) runts of \(sim.server?.counters.segmentsSent ?? 0) segments, the first \(runts.prefix(3))")
    }

    /// RFC 7661 on a slow link: 200 short exchanges on a kept-alive
    /// connection, then a 2 MB answer. The short answers never filled the
    /// window, so their ACKs did not grow it, and the large one starts from
    /// the window the link has seen work; until 2026-12-07 it left at 200
    /// segments, a burst twice the size of the link's queue.
    @Test func aWindowThatShortExchangesNeverUsedDoesNotBurstIntoTheQueue() {
        let plan = FaultInjector.Plan(delay: .milliseconds(20), bitsPerSecond: 4_000_000)
        var configuration = TCPConfiguration()
        configuration.maximumSegmentSize = 1460
        configuration.receiveBufferSize = 4 << 20
        configuration.sendBufferSize = 4 << 20
        var sim = Simulation(plan: plan, seed: 5, configuration: configuration)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        func read(_ connection: TCPConnection?) -> Int {
            guard let connection else { return 0 }
            var total = 0
            for _ in 0 ..< 64 {
                let n = buffer.withUnsafeMutableBytes { connection.read(into: $0) }
                if n == 0 { break }
                total += n
            }
            return total
        }
        var exchanges = 0, requestSent = false, answered = 0, serverHeard = 0
        let answer = [UInt8](repeating: 0x61, count: 1000)
        let large = [UInt8](repeating: 0x62, count: 2_000_000)
        var largeWritten = 0, received = 0
        // When the large answer was written, and the queue's drops in the 100 ms that followed.
        var largeAt: Instant?
        var overflowedAtFirst = 0
        var steps = 0
        while steps < 2_000_000, sim.now < Instant.milliseconds(120_000), received < large.count {
            steps += 1
            sim.deliver()
            if exchanges < 200 {
                if !requestSent, sim.client.state == .established {
                    _ = [UInt8](repeating: 0x71, count: 100).withUnsafeBytes { sim.client.write($0) }
                    requestSent = true
                }
                serverHeard += read(sim.server)
                if serverHeard >= 100, let server = sim.server {
                    serverHeard -= 100
                    _ = answer.withUnsafeBytes { server.write($0) }
                }
                answered += read(sim.client)
                if answered >= 1000 {
                    answered -= 1000
                    exchanges += 1
                    requestSent = false
                }
            } else {
                if largeAt == nil { largeAt = sim.now }
                if let server = sim.server, largeWritten < large.count {
                    largeWritten += large.withUnsafeBytes { server.write(UnsafeRawBufferPointer(rebasing: $0[largeWritten...])) }
                }
                received += read(sim.client)
            }
            sim.flush()
            if let largeAt, sim.now <= largeAt + .milliseconds(100) { overflowedAtFirst = sim.toClient.counters.overflowed }
            sim.step(maximum: .milliseconds(50))
        }
        #expect(exchanges == 200 && received == large.count, "\(exchanges) exchanges, \(received) bytes by \(sim.now)")
        // Its first round trips fit the link's queue (before, 86 of their packets overflowed it).
        #expect(overflowedAtFirst == 0, "\(overflowedAtFirst) overflowed; in all \(sim.toClient.counters) \(sim.server?.counters ?? .init())")
    }
}
