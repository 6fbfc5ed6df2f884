internal import Sys
internal import Wire
internal import Stack

/// `sluice dump`: runs a command in a fresh namespace whose traffic goes to
/// Sluice's TUN, and prints every packet it sends, tcpdump-style. Pings are
/// answered locally so that the command sees replies; nothing else is (the
/// relay is `sluice exec`, issue #4). Malformed packets are printed as such and
/// counted, never trusted.
public struct PacketDump {
    public struct Options: Sendable {
        public var command: [String]
        /// Stop after this many packets.
        public var count: Int?
        /// Stop after this long.
        public var seconds: Double?
        public var answerPings = true
        public var mtu = 1500

        public init(command: [String]) { self.command = command }
    }

    public struct Summary: Sendable, CustomStringConvertible {
        public var packets = 0
        public var malformed = 0
        public var pingsAnswered = 0
        public var exit: String = "still running"
        public var description: String {
            "\(packets) packets, \(malformed) malformed, \(pingsAnswered) pings answered; command \(exit)"
        }
    }

    public let options: Options

    public init(options: Options) { self.options = options }

    /// Runs to completion and returns the command's exit status (or 128 + signal).
    public func run(print: (String) -> Void) throws -> (status: Int32, summary: Summary) {
        guard !options.command.isEmpty else { throw EngineError.usage("sluice dump: no command given") }
        // Block the stop signals before any thread starts, so all of them arrive here.
        let signals: SignalFD
        do { signals = try SignalFD([Signal.interrupt, Signal.terminate, Signal.hangup]) } catch { throw EngineError.system("signalfd", error) }
        var setup: NamespaceSetup?
        defer { setup?.remove() }
        let raw: Int32, child: ChildProcess, gate: CommandGate
        if EngineError.missingPrivileges() != nil {
            // Without the privilege to make namespaces: in a user namespace, as `exec` does.
            let made = try UserNamespaceSetup.start(for: "dump", mtu: options.mtu, resolv: nil, openFilesSoftLimit: nil, command: options.command)
            if let diagnostics = made.diagnostics { _ = FileDescriptor(rawValue: diagnostics) }
            (raw, child, gate) = (made.tun, made.child, made.gate)
        } else {
            let made = try NamespaceSetup.create(name: "sluice-dump-\(ProcessControl.currentID)", mtu: options.mtu)
            setup = made
            // The command runs as the one who started Sluice, as it always did here.
            (raw, child, gate) = try made.configure(launching: ["--keep-root"], command: options.command)
        }
        let tun = TunDevice(adopting: raw, name: NamespaceSetup.tunName, virtioHeaderLength: NamespaceSetup.tunVirtioHeaderLength)
        defer { child.terminate() }

        let epoll: Epoll
        do { epoll = try Epoll() } catch { throw EngineError.system("epoll", error) }
        do {
            try epoll.add(tun.descriptor, events: .readable, token: 1)
            try epoll.add(signals.descriptor, events: .readable, token: 2)
        } catch { throw EngineError.system("epoll", error) }

        var summary = Summary()
        var events = Epoll.EventBuffer(capacity: 8)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        defer { buffer.deallocate() }
        let reply = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        defer { reply.deallocate() }
        let clock = ContinuousClock()
        let start = clock.now
        var exitStatus: Int32?
        var drainUntil: ContinuousClock.Instant?
        gate.open()

        loop: while true {
            if let limit = options.count, summary.packets >= limit { break }
            if let seconds = options.seconds, clock.now - start >= .milliseconds(Int64(seconds * 1000)) { break }
            if let until = drainUntil, clock.now >= until { break }
            if exitStatus == nil, let exit = try? child.poll() {
                exitStatus = exit.shellStatus
                summary.exit = exit.description
                // Packets the command sent just before exiting are still printed.
                drainUntil = clock.now + .milliseconds(100)
            }
            let ready: Int
            do { ready = try epoll.wait(into: &events, timeoutMilliseconds: 20) } catch { throw EngineError.system("epoll_wait", error) }
            for i in 0 ..< ready {
                switch events[i].token {
                case 2:
                    if let signal = try? signals.next() {
                        print("sluice: signal \(signal): stopping")
                        child.signal(Signal.terminate)
                        exitStatus = exitStatus ?? 128 + signal
                        break loop
                    }
                default:
                    // Read what is there, a bounded batch per wake-up.
                    for _ in 0 ..< 64 {
                        guard case let .value(n)? = try? tun.read(into: buffer) else { break }
                        summary.packets += 1
                        let elapsed = clock.now - start
                        let packet = UnsafeRawBufferPointer(buffer.sub(0, n))
                        guard let view = try? IPPacketView(packet) else {
                            summary.malformed += 1
                            let error = (try? IPPacketView(packet)).map { _ in "" } ?? describeFailure(packet)
                            print("\(timestamp(elapsed)) malformed packet, \(n) bytes: \(error)")
                            continue
                        }
                        print("\(timestamp(elapsed)) \(view)")
                        if options.answerPings {
                            let length = EchoResponder.reply(to: view, into: reply)
                            if length > 0, case .value? = try? tun.write(UnsafeRawBufferPointer(reply.sub(0, length))) {
                                summary.pingsAnswered += 1
                            }
                        }
                        if let limit = options.count, summary.packets >= limit { break loop }
                    }
                }
            }
        }
        if exitStatus == nil, let exit = try? child.poll() {
            exitStatus = exit.shellStatus
            summary.exit = exit.description
        }
        return (exitStatus ?? 0, summary)
    }

    /// Why parsing failed, for the printed line.
    func describeFailure(_ packet: UnsafeRawBufferPointer) -> String {
        do {
            _ = try IPPacketView(packet)
            return "parsed"
        } catch {
            return error.description
        }
    }

    func timestamp(_ d: Duration) -> String {
        let (seconds, atto) = d.components
        let micro = atto / 1_000_000_000_000
        let digits = String(micro + 1_000_000).dropFirst()
        return "\(seconds).\(digits)"
    }
}
