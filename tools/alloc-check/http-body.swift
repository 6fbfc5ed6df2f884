// Compiled by tools/alloc-check/run together with Sources/HTTP as one module:
// the body path of both HTTP parsers (Content-Length, chunked with
// extensions, read-until-close, passthrough after an upgrade), repeated n
// times between mtrace() and muntrace(). Heads are parsed before tracing
// starts: only body steps are measured, and they must not allocate.
@_silgen_name("mtrace") func mtrace()
@_silgen_name("muntrace") func muntrace()

@inline(never) func work(_ n: Int, _ chunk: [UInt8], _ data: [UInt8],
                         _ length: inout HTTPRequestParser, _ chunked: inout HTTPRequestParser,
                         _ untilClose: inout HTTPResponseParser, _ tunnel: inout HTTPResponseParser) -> Int {
    var sink = 0
    chunk.withUnsafeBytes { c in
        data.withUnsafeBytes { d in
            for _ in 0 ..< n {
                do throws(HTTPParseError) {
                    if case let .body(k)? = try length.parse(d) { sink &+= k }
                    var rest = c
                    while let step = try chunked.parse(rest) {
                        sink &+= step.consumed
                        rest = UnsafeRawBufferPointer(rebasing: rest[step.consumed...])
                    }
                    if case let .body(k)? = try untilClose.parse(d) { sink &+= k }
                    if case let .body(k)? = try tunnel.parse(d) { sink &+= k }
                } catch { sink &+= 1000 }
            }
        }
    }
    return sink
}

func start<P>(_ parser: inout P, _ head: String, parse: (inout P, UnsafeRawBufferPointer) throws(HTTPParseError) -> HTTPParseStep<some Sendable & Equatable>?) {
    var bytes = Array(head.utf8)
    bytes.withUnsafeMutableBytes { b in
        var rest = UnsafeRawBufferPointer(b)
        while let step = try! parse(&parser, rest) {
            rest = UnsafeRawBufferPointer(rebasing: rest[step.consumed...])
            if case .head = step { break }
        }
    }
}

@main struct Main {
    static func main() {
        let n = Int(CommandLine.arguments[1])!
        var length = HTTPRequestParser()
        start(&length, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000000000\r\n\r\n") { p, b throws(HTTPParseError) in try p.parse(b) }
        var chunked = HTTPRequestParser()
        start(&chunked, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n") { p, b throws(HTTPParseError) in try p.parse(b) }
        var untilClose = HTTPResponseParser()
        start(&untilClose, "HTTP/1.1 200 OK\r\n\r\n") { p, b throws(HTTPParseError) in try p.parse(b) }
        var tunnel = HTTPResponseParser()
        tunnel.expectResponse(to: .connect)
        start(&tunnel, "HTTP/1.1 200 Connection Established\r\n\r\n") { p, b throws(HTTPParseError) in try p.parse(b) }
        _ = try! tunnel.parse(UnsafeRawBufferPointer(start: nil, count: 0))   // .upgraded
        let data = [UInt8](repeating: 0x61, count: 1400)
        let chunk = Array("1a0;ext=\"v\"\r\n".utf8) + [UInt8](repeating: 0x62, count: 0x1a0) + Array("\r\n".utf8)
        mtrace()
        // One allocation on purpose, so that a trace that records nothing fails the check.
        let control = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
        let r = work(n, chunk, data, &length, &chunked, &untilClose, &tunnel)
        muntrace()
        control.deallocate()
        print(r)
    }
}
