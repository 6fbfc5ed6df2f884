// Compiled by tools/alloc-check/run together with Sources/Wire as one module:
// one round of every TCP and DNS parse/emit path, repeated n times between
// mtrace() and muntrace(). Inputs are built before tracing starts.
@_silgen_name("mtrace") func mtrace()
@_silgen_name("muntrace") func muntrace()

// Runs each parser/emitter `n` times between mtrace() and muntrace().
@inline(never) func work(_ n: Int, _ syn: [UInt8], _ dns: [UInt8], _ query: [UInt8], _ out: UnsafeMutableRawBufferPointer,
                         _ longName: String, _ cname: DNSName) -> Int {
    var sink = 0
    let src = IPv4Address(10, 99, 0, 1), dst = IPv4Address(10, 99, 1, 2)
    let v6 = IPv6Address(high: 0xfd00_0099_0000_0000, low: 1)
    syn.withUnsafeBytes { raw in
        dns.withUnsafeBytes { d in
            query.withUnsafeBytes { q in
                for _ in 0 ..< n {
                    do throws(WireError) {
                        let view = try TCPView(raw)
                        sink &+= Int(view.sourcePort) &+ Int(view.options.maximumSegmentSize ?? 0)
                        for option in view.optionList { if case .noOperation = option { sink &+= 1 } }
                        if view.isChecksumValid(source: src, destination: dst) { sink &+= 1 }
                        if view.isChecksumValid(source: v6, destination: v6) { sink &+= 1 }
                        var h = TCPHeader(view)
                        h.options.sackBlocks.append(TCPSackBlock(left: SequenceNumber(1), right: SequenceNumber(2)))
                        h.options.timestamps = nil
                        sink &+= try h.emit(into: out, source: src, destination: dst, payload: raw)
                        sink &+= try h.emit(into: out, source: v6, destination: v6, payload: raw)
                        try TCPHeader.fillChecksum(out.sub(0, 40), source: src, destination: dst)
                        _ = try? TCPView(UnsafeRawBufferPointer(out.sub(0, 19)))

                        let m = try DNSMessageView(d)
                        for question in m.questions { if question.name.matches(longName) { sink &+= 1 } }
                        for answer in m.answers {
                            switch answer.data {
                            case let .a(a): sink &+= Int(a.value & 1)
                            case let .cname(name): if name.matches("api.sluice.test") { sink &+= 1 }; sink &+= name.wireLength
                            case .aaaa, .ptr, .other: break
                            }
                            if answer.name.matches(m.question!.name) { sink &+= 1 }
                        }
                        let qv = try DNSMessageView(q)
                        sink &+= try DNSMessageWriter.respond(to: qv, with: CollectionOfOne(IPAddress.v4(src)),
                                                              timeToLive: 5, into: out)
                        var w = try DNSMessageWriter(respondingTo: qv, into: out)
                        try w.appendAnswer(.cname(cname), timeToLive: 1)
                        try w.appendAnswer(name: cname, .aaaa(v6), timeToLive: 1)
                        sink &+= w.length
                        _ = try? DNSMessageView(UnsafeRawBufferPointer(out.sub(0, 20)))
                    } catch { sink &+= 1000 }
                }
            }
        }
    }
    return sink
}

@main struct Main {
    static func main() {
        let syn: [UInt8] = [0xcf, 0x00, 0x1f, 0x90, 0x54, 0x86, 0xb0, 0x48, 0x00, 0x00, 0x00, 0x00,
            0xa0, 0x02, 0xfb, 0xe0, 0x27, 0x63, 0x00, 0x00, 0x02, 0x04, 0x04, 0xd8, 0x04, 0x02, 0x08, 0x0a,
            0x8c, 0x05, 0x90, 0x67, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x0a]
        func name(_ s: String) -> [UInt8] { s.split(separator: ".").flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0] }
        let dns: [UInt8] = [0, 7, 0x85, 0x80, 0, 1, 0, 2, 0, 0, 0, 0] + name("alias.sluice.test") + [0, 1, 0, 1]
            + [0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 6, 3] + Array("api".utf8) + [0xc0, 18]
            + [0xc0, 47, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 99, 1, 81]
        let query: [UInt8] = [0x9c, 0x40, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0] + name("a-rather-long-name.sluice.test") + [0, 1, 0, 1]
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 8)
        let longName = String(repeating: "a", count: 1) + "lias.SLUICE.test."   // a heap string
        let cname = DNSName("cdn.a-rather-long-name.sluice.test")!
        let n = Int(CommandLine.arguments[1])!
        mtrace()
        // One allocation on purpose, so that a trace that records nothing fails the check.
        let control = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
        let r = work(n, syn, dns, query, out, longName, cname)
        muntrace()
        control.deallocate()
        print(r)
    }
}
