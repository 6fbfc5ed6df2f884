internal import HTTP
internal import Sys
internal import Wire

/// One client of the control socket: requests are parsed as they arrive (in
/// any pieces, several at once), answered in order, and the answers written as
/// the socket takes them. Everything is bounded: a head by the parser's limits,
/// a body by `ControlRouter.maximumBodyBytes`, queued answers by `maximumQueuedOutput`.
final class ControlConnection {
    let socket: UnixSocket
    let token: UInt64
    var parser = HTTPRequestParser(limits: HTTPParserLimits(maxHeadBytes: 16 * 1024, maxHeaderCount: 64,
                                                            maxStartLineBytes: 4 * 1024))
    /// The request whose body is being read.
    var head: HTTPRequestHead?
    var body: [UInt8] = []
    var output: [UInt8] = []
    var outputOffset = 0
    /// An answer said `Connection: close` (or the request was bad): nothing more is read.
    var closing = false
    /// The client shut its side: answer what was asked, then close.
    var readClosed = false
    var interest: Epoll.Events = [.readable]
    /// A reload this client asked for is being read: its answer comes with
    /// read number `generation` (`finishReload`), and nothing after it is
    /// parsed or read until then, so that answers keep their order.
    var awaitingReload: (generation: Int, close: Bool)?
    /// A `/requests?wait=` found nothing after `after`: it is answered when
    /// something is, or at `deadline` (CLOCK_MONOTONIC nanoseconds;
    /// `ControlServer.answerRequestWaits`), and, as for a reload, nothing
    /// after it is parsed or read until then.
    var awaitingRequests: (after: UInt64, limit: Int, deadline: Int64, close: Bool)?
    /// What arrived after the awaited request, parsed once it is answered.
    var unparsed: [UInt8] = []

    /// A client that does not read its answers stops being read from beyond this.
    static let maximumQueuedOutput = 1 << 20

    init(socket: consuming UnixSocket, token: UInt64) {
        self.socket = socket
        self.token = token
    }

    var hasOutput: Bool { outputOffset < output.count }

    /// Done: every answer written and nothing more will be read.
    var finished: Bool { !hasOutput && !isAwaiting && (closing || readClosed) }

    /// An answer is awaited (a reload's read, or requests to come).
    var isAwaiting: Bool { awaitingReload != nil || awaitingRequests != nil }

    /// Parses `input` and queues an answer for each complete request.
    func receive(_ input: UnsafeRawBufferPointer, target: some ControlTarget) {
        guard !isAwaiting else {
            unparsed.append(contentsOf: input)
            return
        }
        var rest = input
        while !closing {
            let step: HTTPRequestStep?
            do { step = try parser.parse(rest) } catch {
                answer(.error(400, "bad request: \(error)"), close: true)
                return
            }
            guard let step else { return }
            switch step {
            case let .head(parsed, _):
                if parsed.isChunked {
                    answer(.error(411, "send the body with a Content-Length"), close: true)
                    return
                }
                if let length = parsed.contentLength, length > ControlRouter.maximumBodyBytes {
                    answer(.error(413, "bodies are limited to \(ControlRouter.maximumBodyBytes) bytes"), close: true)
                    return
                }
                head = parsed
                body.removeAll(keepingCapacity: true)
            case let .body(consumed):
                body.append(contentsOf: rest.prefix(consumed))
            case let .end(consumed):
                body.append(contentsOf: rest.prefix(consumed))
                guard let request = head else {
                    answer(.error(400, "bad request"), close: true)
                    return
                }
                head = nil
                switch ControlRouter.respond(to: ControlRequest(method: request.method, target: request.target, body: body),
                                             target: target) {
                case let .now(response):
                    answer(response, close: !request.keepAlive)
                case let .afterReload(generation):
                    awaitingReload = (generation, !request.keepAlive)
                    unparsed.append(contentsOf: rest.suffix(from: step.consumed))
                    return
                case let .whenRequests(after, limit, wait):
                    awaitingRequests = (after, limit, MonotonicClock.now() &+ Int64(wait) * 1_000_000, !request.keepAlive)
                    unparsed.append(contentsOf: rest.suffix(from: step.consumed))
                    return
                }
            case .upgraded:
                answer(.error(400, "no protocol upgrades here"), close: true)
                return
            }
            rest = rest.suffix(from: step.consumed)
        }
    }

    /// Read number `generation` has been applied: answers the reload if it
    /// waited for that read (or an earlier one), then what came after it.
    func finishReload(generation: Int, _ result: Result<String, ControlFailure>, target: some ControlTarget) {
        guard let awaited = awaitingReload, awaited.generation <= generation else { return }
        awaitingReload = nil
        answer(ControlRouter.outcome(result), close: awaited.close)
        receiveUnparsed(target: target)
    }

    /// Answers the awaited `/requests?wait=` if something came after its id
    /// or its wait is over at `now`, then what came after it. Returns
    /// whether it did.
    func finishRequestWait(now: Int64, target: some ControlTarget) -> Bool {
        guard let awaited = awaitingRequests else { return false }
        let page = target.recentRequests(after: awaited.after, limit: awaited.limit)
        guard !page.entries.isEmpty || page.missed > 0 || page.newest < awaited.after || now >= awaited.deadline else { return false }
        awaitingRequests = nil
        answer(ControlRouter.requests(page), close: awaited.close)
        receiveUnparsed(target: target)
        return true
    }

    /// What came behind an awaited request, now that it is answered.
    private func receiveUnparsed(target: some ControlTarget) {
        guard !unparsed.isEmpty else { return }
        let rest = unparsed
        unparsed = []
        rest.withUnsafeBytes { receive($0, target: target) }
    }

    /// The client closed its side: a request cut short gets no answer.
    func receivedEnd() {
        readClosed = true
    }

    func answer(_ response: ControlResponse, close: Bool) {
        if outputOffset == output.count {
            output.removeAll(keepingCapacity: true)
            outputOffset = 0
        }
        output += response.serialized(close: close)
        if close { closing = true }
    }

    /// Writes what the socket takes; false when the client is gone.
    func flush() -> Bool {
        while hasOutput {
            let result = output.withUnsafeBytes { raw in try? socket.write(UnsafeRawBufferPointer(rebasing: raw[outputOffset...])) }
            switch result {
            case let .value(n)?: outputOffset += n
            case .wouldBlock?: return true
            case nil: return false
            }
        }
        return true
    }

    /// What to watch the socket for now.
    var wantedEvents: Epoll.Events {
        var events: Epoll.Events = []
        if !closing, !readClosed, !isAwaiting, output.count - outputOffset < Self.maximumQueuedOutput {
            events.insert(.readable)
        }
        if hasOutput { events.insert(.writable) }
        return events
    }
}
