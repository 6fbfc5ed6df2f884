// fuzz-sources: Sources/Wire
// fuzz-corpus: dns
// libFuzzer harness for DNS messages: parsing throws or yields a message whose
// sections all iterate, whose names all print and compare, and to which a
// fake-IP answer can be written and parsed back.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDNS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let message = try? DNSMessageView(bytes) else { return 0 }
    _ = message.description
    for question in message.questions {
        _ = question.description
        _ = question.name.matches("example.test")
        _ = DNSName(question.name).description
    }
    for record in message.answers { _ = record.description; _ = record.data.description }
    for record in message.authorities { _ = record.description }
    for record in message.additionals { _ = record.description }
    // The fake-IP DNS server answers whatever parses; the answer must parse too.
    withUnsafeTemporaryAllocation(byteCount: 1500, alignment: 8) { out in
        guard let n = try? DNSMessageWriter.respond(to: message, with: [.v4(IPv4Address(198, 18, 0, 1))],
                                                   timeToLive: 1, into: out) else { return }
        let reply = try! DNSMessageView(UnsafeRawBufferPointer(out.sub(0, n)))
        precondition(reply.id == message.id, "the answer must carry the query's id")
    }
    return 0
}
