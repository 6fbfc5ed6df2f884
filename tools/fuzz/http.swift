// fuzz-sources: Sources/Crypto Sources/HTTP
// fuzz-corpus: http
// libFuzzer harness for the HTTP/1.x parsers. The first byte seeds the split
// points, the second picks the request methods the response parser expects;
// the rest is the stream. Whatever the bytes: no trap, every step's count is
// within the input, feeding in random pieces gives the same steps (heads,
// body bytes, errors) as feeding whole, and every head serializes to bytes
// that parse back to the same head.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let seed = UInt64(data[0])
    let methodBits = data[1]
    let stream = UnsafeRawBufferPointer(start: data + 2, count: size - 2)
    let limits = HTTPParserLimits(maxHeadBytes: 2048, maxHeaderCount: 16, maxStartLineBytes: 512,
                                  maxChunkLineBytes: 64, maxTrailerBytes: 256)

    let whole = runRequests(stream, pieces: [stream.count], limits: limits)
    let split = runRequests(stream, pieces: randomPieces(stream.count, seed: seed), limits: limits)
    precondition(comparable(whole) == comparable(split), "request steps differ with the split:\n\(whole)\nvs\n\(split)")

    let methods: [HTTPMethod] = (0 ..< 8).map { bit in
        switch (methodBits >> bit) & 1 == 0 ? bit % 3 : 3 {
        case 0: .get
        case 1: .post
        case 2: .head
        default: .connect
        }
    }
    let wholeResponses = runResponses(stream, pieces: [stream.count], methods: methods, limits: limits)
    let splitResponses = runResponses(stream, pieces: randomPieces(stream.count, seed: seed &+ 1), methods: methods,
                                      limits: limits)
    precondition(comparable(wholeResponses) == comparable(splitResponses),
                 "response steps differ with the split:\n\(wholeResponses)\nvs\n\(splitResponses)")

    var sniffer = TLSClientHelloSniffer()
    _ = sniffer.feed(stream)
    _ = ProtocolGuess.guess(stream)
    return 0
}

/// What the steps said, merged so that split-invariant things compare:
/// heads, and the total body bytes between them.
enum Event: Equatable, CustomStringConvertible {
    case head(String)
    case body(Int)
    case end
    case upgraded
    case failed(HTTPParseError)

    var description: String {
        switch self {
        case let .head(h): "head \(h)"
        case let .body(n): "body \(n)"
        case .end: "end"
        case .upgraded: "upgraded"
        case let .failed(e): "error \(e)"
        }
    }
}

/// A throw drops the bytes its call had walked over, so how much body came
/// before an error depends on the split; everything else must not.
func comparable(_ events: [Event]) -> [Event] {
    guard case .failed? = events.last, events.count >= 2, case .body = events[events.count - 2] else { return events }
    var trimmed = events
    trimmed.remove(at: events.count - 2)
    return trimmed
}

func record(_ events: inout [Event], _ n: Int) {
    guard n > 0 else { return }
    if case let .body(m)? = events.last { events[events.count - 1] = .body(m + n) } else { events.append(.body(n)) }
}

func randomPieces(_ count: Int, seed: UInt64) -> [Int] {
    var state = seed
    var pieces: [Int] = []
    var left = count
    while left > 0 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        let n = min(left, 1 + Int((z ^ (z >> 31)) % 9))
        pieces.append(n)
        left -= n
    }
    return pieces
}

func runRequests(_ stream: UnsafeRawBufferPointer, pieces: [Int], limits: HTTPParserLimits) -> [Event] {
    var parser = HTTPRequestParser(limits: limits)
    var events: [Event] = []
    var offset = 0
    do throws(HTTPParseError) {
        for piece in pieces {
            var rest = UnsafeRawBufferPointer(rebasing: stream[offset ..< offset + piece])
            offset += piece
            var rounds = 0
            while let step = try parser.parse(rest) {
                rounds += 1
                precondition(rounds < 10_000, "parser loops")
                precondition(step.consumed >= 0 && step.consumed <= rest.count, "consumed out of range: \(step)")
                switch step {
                case let .head(head, _):
                    checkRoundTrip(head, limits: limits)
                    events.append(.head(head.description + " " + head.headers.description))
                case let .body(n):
                    precondition(n > 0, ".body without bytes")
                    record(&events, n)
                case let .end(n):
                    record(&events, n)
                    events.append(.end)
                case .upgraded:
                    events.append(.upgraded)
                }
                rest = UnsafeRawBufferPointer(rebasing: rest[step.consumed...])
            }
        }
        if let step = try parser.finish(), case .end = step { events.append(.end) }
    } catch {
        events.append(.failed(error))
    }
    return events
}

func runResponses(_ stream: UnsafeRawBufferPointer, pieces: [Int], methods: [HTTPMethod], limits: HTTPParserLimits)
    -> [Event]
{
    var parser = HTTPResponseParser(limits: limits)
    for method in methods { parser.expectResponse(to: method) }
    var events: [Event] = []
    var offset = 0
    do throws(HTTPParseError) {
        for piece in pieces {
            var rest = UnsafeRawBufferPointer(rebasing: stream[offset ..< offset + piece])
            offset += piece
            var rounds = 0
            while let step = try parser.parse(rest) {
                rounds += 1
                precondition(rounds < 10_000, "parser loops")
                precondition(step.consumed >= 0 && step.consumed <= rest.count, "consumed out of range: \(step)")
                switch step {
                case let .head(head, _):
                    let bytes = head.serialized()
                    var again = HTTPResponseParser(limits: HTTPParserLimits())
                    // As an answer to HEAD the framing headers are not judged:
                    // this checks the head alone.
                    again.expectResponse(to: .head)
                    let reparsed = bytes.withUnsafeBytes { b in try? again.parse(b) }
                    guard case let .head(back, consumed)? = reparsed else {
                        preconditionFailure("a response head does not parse back: \(head)")
                    }
                    precondition(back == head && consumed == bytes.count, "response head changed: \(head) vs \(back)")
                    events.append(.head(head.description + " " + head.headers.description))
                case let .body(n):
                    precondition(n > 0, ".body without bytes")
                    record(&events, n)
                case let .end(n):
                    record(&events, n)
                    events.append(.end)
                case .upgraded:
                    events.append(.upgraded)
                }
                rest = UnsafeRawBufferPointer(rebasing: rest[step.consumed...])
            }
        }
        if let step = try parser.finish(), case .end = step { events.append(.end) }
    } catch {
        events.append(.failed(error))
    }
    return events
}

/// A parsed request head written back out parses to itself.
func checkRoundTrip(_ head: HTTPRequestHead, limits: HTTPParserLimits) {
    let bytes = head.serialized()
    var again = HTTPRequestParser(limits: HTTPParserLimits())
    let reparsed = bytes.withUnsafeBytes { b in try? again.parse(b) }
    guard case let .head(back, consumed)? = reparsed else {
        preconditionFailure("a request head does not parse back: \(head)")
    }
    precondition(back == head && consumed == bytes.count, "request head changed: \(head) vs \(back)")
    _ = head.absoluteURL()
    _ = head.keepAlive
    _ = head.expectsContinue
}
