// fuzz-sources: Sources/Crypto Sources/HTTP
// fuzz-corpus: http2client
// libFuzzer harness for Sluice's HTTP/2 client toward origins
// (HTTP2ClientSession): a GET, a chunked POST and a HEAD go out; the first
// byte seeds split points, the rest is what the origin sent. Whatever the
// bytes: no trap; the outcome (an error's code) and, without one, the
// HTTP/1.1 response bytes and the failed streams between them do not
// depend on how the bytes were cut or how little the session takes at a time.

private let requests = Array("""
GET /a HTTP/1.1\r\nHost: o.test\r\n\r\nPOST /b HTTP/1.1\r\nHost: o.test\r\nTransfer-Encoding: chunked\r\nTE: trailers\r\n\r\n5\r\nhello\r\n0\r\n\r\nHEAD /c HTTP/1.1\r\nHost: o.test\r\n\r\n
""".utf8)

private func run(_ pieces: [ArraySlice<UInt8>], take: Int) -> (responses: [UInt8], output: [UInt8], error: String) {
    var session = HTTP2ClientSession()
    var responses: [UInt8] = []
    var sent = 0
    for _ in 0 ..< 16 where sent < requests.count {
        guard let n = requests.withUnsafeBytes({ try? session.send(UnsafeRawBufferPointer(rebasing: $0[sent...])) }) else {
            return ([], [], "send failed")
        }
        sent += n
        if n == 0 { break }
    }
    var output = session.takeOutput()
    for piece in pieces {
        do { try session.receive(Array(piece)) } catch {
            return (responses, output + session.takeOutput(), "\(error.code)")
        }
        for _ in 0 ..< 10_000 {
            let bytes = session.takeResponseBytes(maximum: take)
            precondition(bytes.count <= take, "more response bytes than asked for")
            responses += bytes
            if bytes.isEmpty {
                // A failed stream's turn (reset, or left unprocessed by GOAWAY): marked in place.
                guard let failure = session.takeFailedStream() else { break }
                responses += Array("<\(failure.code) \(failure.unprocessed)>".utf8)
            }
        }
        output += session.takeOutput()
    }
    return (responses, output, "")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2Client(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = Array(UnsafeRawBufferPointer(start: data + 1, count: size - 1))
    let whole = run([bytes[...]], take: 1 << 30)
    var pieces: [ArraySlice<UInt8>] = []
    var state = UInt64(data[0])
    var offset = 0
    while offset < bytes.count {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let n = min(bytes.count - offset, 1 + Int(state >> 58))
        pieces.append(bytes[offset ..< offset + n])
        offset += n
    }
    let split = run(pieces, take: 1 + Int(data[0] % 17))
    precondition(whole.error == split.error, "the outcome depends on how the bytes were cut: \(whole.error) / \(split.error)")
    // After an error the engine fails the request; what came before it was taken as it came.
    if whole.error.isEmpty {
        precondition(whole.responses == split.responses, "the responses depend on how the bytes were cut")
    }
    return 0
}
