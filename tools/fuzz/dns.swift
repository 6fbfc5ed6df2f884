// fuzz-sources: Sources/Wire
// fuzz-corpus: dns
// libFuzzer harness for the DNS parser and writer: whatever the bytes,
// parsing either throws or yields a view whose sections iterate exactly their
// counts and whose names print and copy; a response written to an accepted
// query parses back and carries the query's name.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDNS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let message = try? DNSMessageView(bytes) else { return 0 }
    _ = message.description
    for question in message.questions {
        _ = question.description
        _ = question.name.matches("www.example.test")
        precondition(DNSName(question.name).wire.count == question.name.wireLength)
    }
    for section in [message.answers, message.authorities, message.additionals] {
        var seen = 0
        for record in section {
            seen += 1
            _ = record.description
            _ = DNSName(record.name)
            switch record.data {
            case let .cname(target), let .ptr(target): _ = DNSName(target).description
            case .a, .aaaa, .other: break
            }
        }
        precondition(seen == section.count, "a validated section iterates its whole count")
    }
    if let question = message.question {
        withUnsafeTemporaryAllocation(byteCount: 1024, alignment: 8) { buffer in
            let addresses: [IPAddress] = [.v4(IPv4Address(198, 18, 0, 1)), .v6(IPv6Address.loopback)]
            guard let n = try? DNSMessageWriter.respond(to: message, with: addresses, timeToLive: 1, into: buffer) else {
                return
            }
            let response = try! DNSMessageView(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
            precondition(response.length == n)
            precondition(response.question!.name.matches(question.name), "the response asks the query's question")
            for answer in response.answers { precondition(answer.name.matches(question.name)) }
            // A CNAME to the question's own name compresses to a pointer and still reads back.
            let name = DNSName(question.name)
            guard var writer = try? DNSMessageWriter(respondingTo: message, into: buffer),
                  (try? writer.appendAnswer(.cname(name), timeToLive: 1)) != nil,
                  (try? writer.appendAnswer(name: name, .ptr(name), timeToLive: 1)) != nil else { return }
            let again = try! DNSMessageView(writer.bytes)
            for answer in again.answers {
                precondition(answer.name.matches(question.name))
                if case let .cname(target) = answer.data { precondition(target.matches(question.name)) }
                if case let .ptr(target) = answer.data { precondition(target.matches(question.name)) }
            }
        }
    }
    return 0
}
