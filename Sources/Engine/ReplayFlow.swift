internal import HTTP
internal import Stack
internal import Wire

/// What one captured TCP connection carried, as `sluice replay` reads it: the
/// client's first bytes (what the live engine sniffs), and every HTTP
/// exchange on it, requests and responses paired in pipelining order. Bodies
/// are counted, not kept. A hole in the capture ends the HTTP reading of the
/// connection: what follows a gap cannot be framed.
final class ReplayFlow {
    var id: UInt64
    let key: FlowKey
    /// Nanoseconds since the Unix epoch.
    let started: UInt64
    var ended: UInt64
    let sawHandshake: Bool
    /// The name fake-IP DNS (as seen in the capture) gave the server's address when the flow began.
    var dnsName: String?
    var dnsNameIsFake = false
    /// The client's first bytes, at most `FlowFacts.sniffLimit`.
    private(set) var firstBytes: [UInt8] = []
    private(set) var guess = ProtocolGuess.needMore
    private(set) var serverName: String?
    private(set) var exchanges: [ReplayExchange] = []
    var bytesUp = 0
    var bytesDown = 0
    var endReason: PassiveTCPTable.EndReason?
    /// Why HTTP reading stopped early (a gap, a parse error, an upgrade).
    private(set) var httpStopped: String?
    private var requests = HTTPRequestParser()
    private var responses = HTTPResponseParser()
    /// The exchange the next response belongs to.
    private var responding = 0
    private var tlsSniffer = TLSClientHelloSniffer()
    private var tlsDone = false
    /// A UDP flow whose first datagram is a QUIC client Initial (its name,
    /// if the hello in its first datagrams gives one, goes to `serverName`).
    private(set) var isQUIC = false
    private var quicSniffer: QUICClientHelloSniffer?
    private var datagramsRead = 0


    init(id: UInt64, key: FlowKey, started: UInt64, sawHandshake: Bool) {
        self.id = id
        self.key = key
        self.started = started
        ended = started
        self.sawHandshake = sawHandshake
    }

    var isHTTP: Bool { guess == .http }

    /// A datagram from the app: the first ones are read for a QUIC
    /// ClientHello, as many as the tunnel would hold while it waits for one.
    func readDatagram(_ payload: UnsafeRawBufferPointer) {
        guard datagramsRead < Tunnel.heldDatagramLimit else { return }
        datagramsRead += 1
        if datagramsRead == 1 {
            isQUIC = QUICClientHelloSniffer.mayStart(payload)
            if isQUIC { quicSniffer = QUICClientHelloSniffer() }
        }
        guard var sniffer = quicSniffer else { return }
        if let name = sniffer.feed(payload).serverName { serverName = name }
        quicSniffer = sniffer
    }

    /// Bytes from the client, in order.
    func up(_ bytes: UnsafeRawBufferPointer, at time: UInt64) {
        bytesUp += bytes.count
        if firstBytes.count < FlowFacts.sniffLimit, guess == .needMore || guess == .tls {
            firstBytes += bytes.prefix(FlowFacts.sniffLimit - firstBytes.count)
            if guess == .needMore {
                guess = firstBytes.withUnsafeBytes { ProtocolGuess.guess($0) }
                if guess == .http {
                    firstBytes.withUnsafeBytes { readRequests($0, at: time) }
                    return
                }
            }
            if guess == .tls, !tlsDone {
                let step = firstBytes.withUnsafeBytes { tlsSniffer.feed($0) }
                tlsSniffer = TLSClientHelloSniffer()
                switch step {
                case .needMore: break
                case let .serverName(name): serverName = name; tlsDone = true
                case .noServerName, .notTLS: tlsDone = true
                }
            }
            return
        }
        if guess == .http { readRequests(bytes, at: time) }
    }

    /// Bytes from the server, in order.
    func down(_ bytes: UnsafeRawBufferPointer, at time: UInt64) {
        bytesDown += bytes.count
        guard guess == .http, httpStopped == nil else { return }
        var rest = bytes
        for _ in 0 ..< 100_000 {
            let step: HTTPResponseStep?
            do { step = try responses.parse(rest) } catch {
                httpStopped = "response: \(error)"
                return
            }
            guard let step else { return }
            switch step {
            case let .head(head, consumed):
                rest = rest.suffix(from: consumed)
                if head.isInformational, head.status != 101 { continue }
                if responding < exchanges.count {
                    exchanges[responding].response = head
                    exchanges[responding].responseStarted = time
                }
            case let .body(consumed):
                rest = rest.suffix(from: consumed)
                if responding < exchanges.count { exchanges[responding].responseBodyBytes += consumed }
            case let .end(consumed):
                rest = rest.suffix(from: consumed)
                if responding < exchanges.count {
                    exchanges[responding].responseBodyBytes += consumed
                    exchanges[responding].responseEnded = time
                }
                responding += 1
            case .upgraded:
                httpStopped = "upgraded"
                return
            }
        }
    }

    /// A hole in one direction: nothing after it can be framed.
    func gap(_ n: Int, up: Bool) {
        if up { bytesUp += n } else { bytesDown += n }
        if httpStopped == nil, guess == .http { httpStopped = "\(n) bytes missing from the capture (\(up ? "up" : "down"))" }
        if up, guess == .needMore || guess == .tls { guess = guess == .needMore ? .other : guess; tlsDone = true }
    }

    /// The connection ended: a response that runs to the close ends here.
    func finish(at time: UInt64) {
        ended = time
        guard guess == .http, httpStopped == nil else { return }
        if let step = try? responses.finish(), case let .end(consumed) = step, responding < exchanges.count {
            exchanges[responding].responseBodyBytes += consumed
            exchanges[responding].responseEnded = time
        }
    }

    private func readRequests(_ bytes: UnsafeRawBufferPointer, at time: UInt64) {
        guard httpStopped == nil else { return }
        var rest = bytes
        for _ in 0 ..< 100_000 {
            let step: HTTPRequestStep?
            do { step = try requests.parse(rest) } catch {
                httpStopped = "request: \(error)"
                return
            }
            guard let step else { return }
            switch step {
            case let .head(head, consumed):
                rest = rest.suffix(from: consumed)
                exchanges.append(ReplayExchange(head: head, started: time))
                responses.expectResponse(to: head.method)
            case let .body(consumed):
                rest = rest.suffix(from: consumed)
                if let last = exchanges.indices.last { exchanges[last].requestBodyBytes += consumed }
            case let .end(consumed):
                rest = rest.suffix(from: consumed)
                if let last = exchanges.indices.last {
                    exchanges[last].requestBodyBytes += consumed
                    exchanges[last].requestEnded = time
                }
            case .upgraded:
                httpStopped = "upgraded"
                return
            }
        }
    }
}

/// One request seen in a capture, with its response when one came.
struct ReplayExchange {
    var head: HTTPRequestHead
    /// Nanoseconds since the Unix epoch: the request head's segment.
    var started: UInt64
    var requestEnded: UInt64?
    var requestBodyBytes = 0
    var response: HTTPResponseHead?
    var responseStarted: UInt64?
    var responseEnded: UInt64?
    var responseBodyBytes = 0
}
