// fuzz-sources: Sources/Crypto Sources/HTTP
// fuzz-corpus: http2
// libFuzzer harness for the HTTP/2 gateway: the first byte seeds split
// points; the rest, after the connection preface this harness adds, is what
// an app sent. Whatever the bytes: no trap; the HTTP/1.1 requests, the frames
// back and the outcome (a connection error's code) do not depend on how the
// bytes were cut; every request that comes out parses as HTTP/1.1 with the
// engine's own parser, which starts afresh where a request is cut (its
// stream reset while its body went on); and answering each request it parsed (a small
// response, chunked or not, or one that runs to the origin's close; part of
// one then a reset; a reset; no answer at all, as the session's stream
// endings do) keeps the gateway whole.

private let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

private func run(_ pieces: [ArraySlice<UInt8>]) -> (requests: [UInt8], cuts: [Int], output: [UInt8], error: String) {
    var gateway = HTTP2Gateway()
    var requests: [UInt8] = []
    var cuts: [Int] = []
    var output = gateway.takeOutput()
    func take() {
        let taken = gateway.takeRequests()
        cuts += taken.cuts.map { requests.count + $0 }
        requests += taken.bytes
    }
    for piece in pieces {
        do { try gateway.receive(Array(piece)) } catch {
            take()
            return (requests, cuts, output + gateway.takeOutput(), "\(error.code)")
        }
        take()
        output += gateway.takeOutput()
    }
    return (requests, cuts, output, "")
}

/// The frames other than WINDOW_UPDATE, and the increments per stream.
private func framesAndWindows(_ bytes: [UInt8]) -> (frames: [[UInt8]], windows: [UInt32: Int]) {
    var frames: [[UInt8]] = []
    var windows: [UInt32: Int] = [:]
    var at = 0
    while at + 9 <= bytes.count {
        let length = Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
        precondition(at + 9 + length <= bytes.count, "a frame cut short in the gateway's output")
        let frame = Array(bytes[at ..< at + 9 + length])
        if bytes[at + 3] == 8, length == 4 {
            let stream = UInt32(frame[5]) << 24 | UInt32(frame[6]) << 16 | UInt32(frame[7]) << 8 | UInt32(frame[8])
            windows[stream, default: 0] += Int(frame[9]) << 24 | Int(frame[10]) << 16 | Int(frame[11]) << 8 | Int(frame[12])
        } else {
            frames.append(frame)
        }
        at += 9 + length
    }
    precondition(at == bytes.count, "trailing bytes in the gateway's output")
    return (frames, windows)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = preface + Array(UnsafeRawBufferPointer(start: data + 1, count: size - 1))
    let whole = run([bytes[...]])
    var pieces: [ArraySlice<UInt8>] = []
    var state = UInt64(data[0])
    var offset = 0
    while offset < bytes.count {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let n = min(bytes.count - offset, 1 + Int(state >> 58))
        pieces.append(bytes[offset ..< offset + n])
        offset += n
    }
    let split = run(pieces)
    precondition(whole.requests == split.requests, "the requests depend on how the bytes were cut")
    precondition(whole.cuts == split.cuts, "where requests are cut depends on how the bytes were cut")
    precondition(whole.cuts == whole.cuts.sorted() && whole.cuts.allSatisfy { $0 <= whole.requests.count }, "cuts out of order")
    // WINDOW_UPDATEs come as the bytes came: a stream's DATA is given back as
    // it goes on, and not once the stream has ended, so how much a stream
    // gets back depends on timing; the connection's does not.
    let (wholeFrames, wholeWindows) = framesAndWindows(whole.output)
    let (splitFrames, splitWindows) = framesAndWindows(split.output)
    if whole.error.isEmpty, split.error.isEmpty {
        precondition(wholeWindows[0] == splitWindows[0], "the connection window given back depends on how the bytes were cut")
    }
    precondition(wholeFrames == splitFrames, "the frames back depend on how the bytes were cut")
    precondition(whole.error == split.error, "the outcome depends on how the bytes were cut: \(whole.error) / \(split.error)")

    // The requests are HTTP/1.1 the engine reads; each gets an answer. The
    // app's bytes come in two halves, so frames also arrive after the answers
    // to the first half's requests (on streams reset or left unanswered).
    var parser = HTTPRequestParser()
    var gateway = HTTP2Gateway()
    var pending: [UInt8] = []
    // Where requests stop short, in `pending`'s terms.
    var cuts: [Int] = []
    var choice = UInt64(data[0]) &+ 0x9E37_79B9_7F4A_7C15
    func answerNewRequests() {
        var heads = 0
        pending.withUnsafeBytes { raw in
            var at = 0
            for _ in 0 ..< 100_000 {
                // The engine reads up to a cut, then starts afresh (Tunnel.requestCut).
                if let cut = cuts.first, at == cut {
                    parser = HTTPRequestParser()
                    cuts.removeFirst()
                    continue
                }
                let limit = cuts.first ?? raw.count
                guard at < limit else { break }
                let step: HTTPRequestStep?
                do { step = try parser.parse(UnsafeRawBufferPointer(rebasing: raw[at ..< limit])) } catch {
                    preconditionFailure("the gateway made a request the engine cannot read: \(error)")
                }
                // nil: the parser keeps what it was given (a head's start).
                guard let step else { at = limit; continue }
                if case .head = step { heads += 1 }
                at += step.consumed
                if step.consumed == 0, case .head = step {} else if step.consumed == 0 { break }
            }
            pending.removeFirst(at)
            cuts = cuts.map { $0 - at }
        }
        for _ in 0 ..< heads {
            choice = choice &* 6364136223846793005 &+ 1442695040888963407
            switch choice >> 61 {
            case 0, 1:
                _ = Array("HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: keep-alive\r\n\r\nhello".utf8).withUnsafeBytes { try? gateway.respond($0) }
            case 2:
                _ = Array("HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n".utf8).withUnsafeBytes { try? gateway.respond($0) }
            case 3:
                // A body that runs to the origin's close; the next response comes on a new connection.
                _ = Array("HTTP/1.0 200 OK\r\n\r\nto the close".utf8).withUnsafeBytes { try? gateway.respond($0) }
                gateway.endResponseAtClose()
            case 4:
                // The upstream failed in the middle of the response.
                _ = Array("HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\nhal".utf8).withUnsafeBytes { try? gateway.respond($0) }
                gateway.resetNextResponse(.internalError)
            case 5:
                gateway.resetNextResponse(.cancel)
            default:
                gateway.leaveNextResponseUnanswered()
            }
            precondition(gateway.responseRoom >= 0 && gateway.openStreams >= 0, "the gateway's books went negative")
        }
    }
    let half = preface.count + (bytes.count - preface.count) / 2
    for part in [bytes[..<half], bytes[half...]] {
        do { try gateway.receive(Array(part)) } catch { break }
        let taken = gateway.takeRequests()
        cuts += taken.cuts.map { pending.count + $0 }
        pending += taken.bytes
        answerNewRequests()
        _ = gateway.takeOutput()
    }
    return 0
}
