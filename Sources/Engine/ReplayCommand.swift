internal import Capture
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// `sluice replay FILE.pcap [--profile FILE] [--format table|flowlog|har]`:
/// reads a capture (tcpdump's Ethernet, Linux cooked or raw IP, or Sluice's
/// own), follows every TCP connection both ways, every UDP session and ping
/// flow, and reports what the profile would do to each flow and each HTTP
/// request, decided by the same code the live engine runs. DNS answers in the capture name the addresses
/// they gave. Exit status: 0 reported, 1 the capture or the profile could
/// not be read, 2 usage.
public struct ReplayCommand {
    public enum Format: String, Sendable, CaseIterable {
        case table, flowlog, har
    }

    public struct Options: Sendable, Equatable {
        public var capture: String
        public var profile: String?
        public var format = Format.table
        public init(capture: String) { self.capture = capture }
    }

    public let options: Options

    public init(options: Options) { self.options = options }

    public static func parse(_ arguments: ArraySlice<String>) -> Result<Options, ReplayUsageError> {
        var positional: [String] = []
        var profile: String?
        var format = Format.table
        var rest = arguments
        while let first = rest.first {
            rest.removeFirst()
            switch first {
            case "--profile":
                guard let value = rest.first else { return .failure(ReplayUsageError("--profile needs a file")) }
                rest.removeFirst()
                profile = value
            case "--format":
                guard let value = rest.first, let chosen = Format(rawValue: value) else {
                    return .failure(ReplayUsageError("--format wants table, flowlog or har"))
                }
                rest.removeFirst()
                format = chosen
            default:
                if first.hasPrefix("-"), first.count > 1 { return .failure(ReplayUsageError("unknown option '\(first)' (see sluice help)")) }
                positional.append(first)
            }
        }
        guard positional.count == 1 else {
            return .failure(ReplayUsageError("want one capture file, for example: sluice replay session.pcap --profile sluice.conf"))
        }
        var options = Options(capture: positional[0])
        options.profile = profile
        options.format = format
        return .success(options)
    }

    /// Reads the capture and prints the report through `print` (one call per
    /// line or document); problems and the summary go to `complain`. Progress
    /// is shown on stderr when it is a terminal.
    public func run(print: (String) -> Void, complain: (String) -> Void) -> Int32 {
        let director: FlowDirector
        var fakeRange = GeneralSettings.defaultFakeIPRange
        if let path = options.profile {
            switch ProfileLoader.load(path) {
            case let .failure(errors):
                complain(errors.description)
                return 1
            case let .success(profile):
                for warning in profile.warnings { complain(warning.description) }
                director = FlowDirector(profile: profile, previous: nil)
                fakeRange = profile.general.fakeIPRange
            }
        } else {
            director = FlowDirector()
        }
        let reader: PcapReader
        do { reader = try PcapReader(path: options.capture) } catch {
            complain("sluice replay: \(error)")
            return 1
        }
        // The table's limits stay out of Options: a public value type whose layout
        // depends on Stack would make every importer recompile when Stack changes.
        let table = PassiveTCPTable()
        var names = ReplayNames(fakeRange: fakeRange)
        var datagrams = ReplayDatagrams()
        var flows: [UInt64: ReplayFlow] = [:]
        // DNS over TCP (RFC 7766): the answers' bytes of each port-53 connection,
        // until a whole length-framed message is in.
        var dnsAnswers: [UInt64: [UInt8]] = [:]
        var finished: [ReplayFlow] = []
        var now: UInt64 = 0
        var unreadable = 0
        let progress = ProcessControl.isTerminal(2)
        func handle(_ event: PassiveTCPTable.Event) {
            switch event {
            case let .opened(connection):
                let flow = ReplayFlow(id: connection.id, key: connection.key, started: now, sawHandshake: connection.sawHandshake)
                if let name = names.name(for: connection.key.destinationAddress) {
                    flow.dnsName = name.name
                    flow.dnsNameIsFake = name.isFake
                }
                flows[connection.id] = flow
                if connection.key.destinationPort == 53 { dnsAnswers[connection.id] = [] }
            case let .data(connection, direction, bytes):
                guard let flow = flows[connection.id] else { return }
                if direction == .up { flow.up(bytes, at: now) } else { flow.down(bytes, at: now) }
                if direction == .down, dnsAnswers[connection.id] != nil {
                    dnsAnswers[connection.id]!.append(contentsOf: bytes)
                    DNSStream.takeMessages(from: &dnsAnswers[connection.id]!) { framed in
                        names.learn(message: UnsafeRawBufferPointer(rebasing: framed[2...]))
                    }
                    // Not DNS after all (a message can be no longer than this): stop collecting.
                    if dnsAnswers[connection.id]!.count > DNSStream.maximumMessage + 2 { dnsAnswers[connection.id] = nil }
                }
            case let .gap(connection, direction, n):
                flows[connection.id]?.gap(n, up: direction == .up)
                // A hole in the answers: the framing is lost from there on.
                if direction == .down { dnsAnswers[connection.id] = nil }
            case let .ended(connection, reason):
                dnsAnswers[connection.id] = nil
                guard let flow = flows.removeValue(forKey: connection.id) else { return }
                flow.endReason = reason
                // Ended by the capture's end or by silence: when it was last seen, not now.
                flow.finish(at: reason == .endOfCapture || reason == .idle ? UInt64(clamping: connection.lastSeen.nanoseconds) : now)
                finished.append(flow)
            }
        }
        do {
            while let packet = try reader.next() {
                now = packet.timestamp
                if progress, reader.framesRead % 50_000 == 0 {
                    ProcessControl.writeStandardError("\rsluice replay: \(reader.framesRead) frames, \(finished.count + flows.count) TCP flows")
                }
                guard let view = try? IPPacketView(packet.datagram) else {
                    unreadable += 1
                    continue
                }
                switch view.upperLayerProtocol {
                case .tcp:
                    table.receive(view, at: Instant(nanoseconds: Int64(truncatingIfNeeded: now)), handle)
                case .udp:
                    names.learn(from: view)
                    datagrams.receive(view, at: now, names: names)
                case .icmp, .icmpv6:
                    datagrams.receive(view, at: now, names: names)
                default:
                    continue
                }
            }
        } catch {
            complain("sluice replay: \(error)")
            if finished.isEmpty && flows.isEmpty { return 1 }
        }
        table.finish(handle)
        datagrams.finish(at: now)
        if progress { ProcessControl.writeStandardError("\r\u{1B}[K") }

        let tcpCount = finished.count
        finished.sort { $0.started != $1.started ? $0.started < $1.started : $0.id < $1.id }
        // Flows of every kind in the order they began, numbered in that order.
        // (A flow's place in the list breaks ties: TCP in connection order, then datagram flows.)
        finished = (finished + datagrams.finished).enumerated()
            .sorted { $0.element.started != $1.element.started ? $0.element.started < $1.element.started : $0.offset < $1.offset }
            .map(\.element)
        for (index, flow) in finished.enumerated() { flow.id = UInt64(index + 1) }
        let report = ReplayReport(flows: finished.map { ($0, director.judge($0)) })
        switch options.format {
        case .table: report.table().forEach(print)
        case .flowlog: report.flowLog().forEach(print)
        case .har: print(report.har())
        }
        let sessions = datagrams.finished.filter { $0.key.transport == .udp }.count
        var summary = "sluice replay: \(reader.framesRead) frames, \(tcpCount) TCP flows, \(sessions) UDP sessions, "
            + "\(datagrams.finished.count - sessions) ping flows, \(report.requestCount) HTTP requests"
        if reader.framesSkipped > 0 { summary += ", \(reader.framesSkipped) frames without IP" }
        if unreadable > 0 { summary += ", \(unreadable) unreadable datagrams (cut by the snaplen, or fragments)" }
        if table.untracked > 0 { summary += ", \(table.untracked) connections not followed (more than \(table.limits.maximumConnections) open)" }
        if datagrams.untracked > 0 { summary += ", \(datagrams.untracked) datagrams of sessions not followed (more than \(ReplayDatagrams.maximumOpen) open)" }
        let gaps = finished.filter { $0.httpStopped != nil && $0.httpStopped != "upgraded" }.count
        if gaps > 0 { summary += ", \(gaps) flows with HTTP cut short (gaps or parse errors)" }
        complain(summary)
        return 0
    }
}

public struct ReplayUsageError: Error, Sendable, CustomStringConvertible {
    public var message: String
    init(_ message: String) { self.message = message }
    public var description: String { "sluice replay: \(message)" }
}

/// Names from DNS answers seen in the capture, for the addresses they gave:
/// what fake-IP DNS knows live. An address in the fake-IP range stands for
/// its name exactly as live; any other is a hint the rules get only when the
/// flow's first bytes name nothing.
struct ReplayNames {
    let fakeRange: IPv4Prefix
    private var names: [IPAddress: String] = [:]
    /// The map stops growing here; later answers replace nothing new.
    static let maximumNames = 1 << 20

    init(fakeRange: IPv4Prefix) { self.fakeRange = fakeRange }

    func name(for address: IPAddress) -> (name: String, isFake: Bool)? {
        guard let name = names[address] else { return nil }
        return (name, isFake(address))
    }

    func isFake(_ address: IPAddress) -> Bool {
        switch address {
        case let .v4(v4): return fakeRange.contains(v4)
        case let .v6(v6): return v6.high == FakeIPPoolConfiguration.defaultV6Prefix.high
        }
    }

    /// A UDP datagram from port 53: its answer teaches names.
    mutating func learn(from packet: IPPacketView) {
        guard let udp = try? UDPView(packet.payload), udp.sourcePort == 53 else { return }
        learn(message: udp.payload)
    }

    /// A DNS response (over UDP, or unframed from TCP): each A and AAAA answer
    /// names its address with the question's name (what the app asked for,
    /// CNAMEs aside).
    mutating func learn(message bytes: UnsafeRawBufferPointer) {
        guard let (name, addresses) = DNSAnswerNames.answers(in: bytes) else { return }
        for (address, _) in addresses where names.count < Self.maximumNames || names[address] != nil {
            names[address] = name
        }
    }
}
