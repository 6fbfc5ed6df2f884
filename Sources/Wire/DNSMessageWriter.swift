// Building DNS messages in place, for the fake-IP DNS server's answers.

/// RDATA to write: the record types Sluice answers with.
public enum DNSResourceData: Hashable, Sendable, CustomStringConvertible {
    case a(IPv4Address)
    case aaaa(IPv6Address)
    case cname(DNSName)
    case ptr(DNSName)

    public var type: DNSType {
        switch self {
        case .a: return .a
        case .aaaa: return .aaaa
        case .cname: return .cname
        case .ptr: return .ptr
        }
    }

    public var description: String {
        switch self {
        case let .a(address): return "A \(address)"
        case let .aaaa(address): return "AAAA \(address)"
        case let .cname(name): return "CNAME \(name)"
        case let .ptr(name): return "PTR \(name)"
        }
    }
}

/// Writes a DNS message into a caller's buffer, section by section: the
/// header first, then questions, then answers. The header's counts are kept
/// up to date after every append, so the bytes so far always form a valid
/// message. Names are compressed against the first question's name, which
/// sits uncompressed at offset 12: an answer owned by that name is a single
/// pointer (0xC00C), and a CNAME or PTR target sharing a suffix with it ends
/// in a pointer to that suffix.
public struct DNSMessageWriter {
    public let buffer: UnsafeMutableRawBufferPointer
    public private(set) var header: DNSHeader
    /// Bytes written so far.
    public private(set) var length: Int

    /// Starts a message with `header`; its four counts are ignored and grow
    /// with each append.
    public init(into buffer: UnsafeMutableRawBufferPointer, header: DNSHeader) throws(WireError) {
        var header = header
        header.questionCount = 0
        header.answerCount = 0
        header.authorityCount = 0
        header.additionalCount = 0
        length = try header.emit(into: buffer)
        self.buffer = buffer
        self.header = header
    }

    /// Starts the response to `query`: its id, opcode, RD and CD and its first
    /// question copied (the name uncompressed, at offset 12); QR and RA set,
    /// AA as asked. Append answers next. Throws `.unsupported(.count)` for a
    /// query without a question. `buffer` must not overlap `query.bytes`.
    public init(respondingTo query: DNSMessageView, into buffer: UnsafeMutableRawBufferPointer,
                responseCode: DNSResponseCode = .noError, authoritative: Bool = true) throws(WireError) {
        guard let question = query.question else { throw .unsupported(layer: .dns, reason: .count) }
        let header = DNSHeader(id: query.header.id, isResponse: true, opcode: query.header.opcode,
                               authoritativeAnswer: authoritative, recursionDesired: query.header.recursionDesired,
                               recursionAvailable: true, checkingDisabled: query.header.checkingDisabled,
                               responseCode: responseCode)
        try self.init(into: buffer, header: header)
        try appendQuestion(question.name.labels, type: question.type, class: question.class)
    }

    /// The message so far.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(buffer.sub(0, length)) }

    public mutating func appendQuestion(_ name: DNSName, type: DNSType, class: DNSClass = .internet) throws(WireError) {
        guard header.answerCount == 0, header.authorityCount == 0, header.additionalCount == 0,
              header.questionCount < .max else { throw .malformed(layer: .dns, reason: .count) }
        let end = name.withLabels { writeName($0, at: length) }
        try appendQuestionFields(type: type, class: `class`, at: end)
    }

    /// Copies a question name out of another message, pointers followed.
    public mutating func appendQuestion(_ name: DNSNameView, type: DNSType, class: DNSClass = .internet) throws(WireError) {
        try appendQuestion(name.labels, type: type, class: `class`)
    }

    mutating func appendQuestion(_ labels: DNSLabelSequence, type: DNSType, class: DNSClass) throws(WireError) {
        guard header.answerCount == 0, header.authorityCount == 0, header.additionalCount == 0,
              header.questionCount < .max else { throw .malformed(layer: .dns, reason: .count) }
        try appendQuestionFields(type: type, class: `class`, at: writeName(labels, at: length))
    }

    mutating func appendQuestionFields(type: DNSType, class: DNSClass, at nameEnd: Int?) throws(WireError) {
        guard var offset = nameEnd else { throw .malformed(layer: .dns, reason: .bufferTooSmall) }
        try require(offset + 4, in: buffer, .dns)
        buffer.setU16(offset, type.rawValue)
        buffer.setU16(offset + 2, `class`.rawValue)
        offset += 4
        length = offset
        header.questionCount += 1
        buffer.setU16(4, header.questionCount)
    }

    /// Appends an answer owned by the first question's name, written as a
    /// pointer to offset 12. Throws `.malformed(.count)` when there is no question.
    public mutating func appendAnswer(_ data: DNSResourceData, timeToLive: UInt32,
                                      class: DNSClass = .internet) throws(WireError) {
        guard header.questionCount > 0 else { throw .malformed(layer: .dns, reason: .count) }
        try require(length + 2, in: buffer, .dns)
        buffer.setU16(length, 0xc000 | UInt16(DNSHeader.length))
        try appendRecordBody(data, timeToLive: timeToLive, class: `class`, at: length + 2)
    }

    /// Appends an answer owned by `name`.
    public mutating func appendAnswer(name: DNSName, _ data: DNSResourceData, timeToLive: UInt32,
                                      class: DNSClass = .internet) throws(WireError) {
        guard let offset = name.withLabels({ writeName($0, at: length) }) else {
            throw .malformed(layer: .dns, reason: .bufferTooSmall)
        }
        try appendRecordBody(data, timeToLive: timeToLive, class: `class`, at: offset)
    }

    /// Appends an EDNS(0) OPT pseudo-record (RFC 6891 §6.1.2): the root name,
    /// type OPT, `payloadSize` as its class, no extended flags, no options.
    /// It goes in the additional section, so nothing may follow it.
    public mutating func appendEDNS(payloadSize: UInt16) throws(WireError) {
        guard header.additionalCount < .max else { throw .malformed(layer: .dns, reason: .count) }
        try require(length + 11, in: buffer, .dns)
        buffer[length] = 0
        buffer.setU16(length + 1, DNSType.opt.rawValue)
        buffer.setU16(length + 3, payloadSize)
        buffer.setU32(length + 5, 0)
        buffer.setU16(length + 9, 0)
        length += 11
        header.additionalCount += 1
        buffer.setU16(10, header.additionalCount)
    }

    mutating func appendRecordBody(_ data: DNSResourceData, timeToLive: UInt32, class: DNSClass,
                                   at offset: Int) throws(WireError) {
        guard header.answerCount < .max, header.authorityCount == 0, header.additionalCount == 0 else {
            throw .malformed(layer: .dns, reason: .count)
        }
        try require(offset + 10, in: buffer, .dns)
        buffer.setU16(offset, data.type.rawValue)
        buffer.setU16(offset + 2, `class`.rawValue)
        buffer.setU32(offset + 4, timeToLive)
        let rdataOffset = offset + 10
        let end: Int
        switch data {
        case let .a(address):
            try require(rdataOffset + 4, in: buffer, .dns)
            address.store(buffer, rdataOffset)
            end = rdataOffset + 4
        case let .aaaa(address):
            try require(rdataOffset + 16, in: buffer, .dns)
            address.store(buffer, rdataOffset)
            end = rdataOffset + 16
        case let .cname(name), let .ptr(name):
            guard let nameEnd = name.withLabels({ writeName($0, at: rdataOffset) }) else {
                throw .malformed(layer: .dns, reason: .bufferTooSmall)
            }
            end = nameEnd
        }
        buffer.setU16(offset + 8, UInt16(end - rdataOffset))
        length = end
        header.answerCount += 1
        buffer.setU16(6, header.answerCount)
    }

    /// Writes `labels` at `offset`, ending in a pointer into the first
    /// question's name when they share a suffix (the first question itself is
    /// written whole), and returns the offset after the name; nil when the
    /// buffer is too small.
    func writeName(_ labels: DNSLabelSequence, at offset: Int) -> Int? {
        let labelCount = labels.reduce(0) { n, _ in n + 1 }
        // How many leading labels to write before pointing at the question's suffix.
        var written = labelCount
        var target = -1
        if header.questionCount > 0 {
            let question = DNSLabelSequence(UnsafeRawBufferPointer(buffer), at: DNSHeader.length)
            let questionCount = question.reduce(0) { n, _ in n + 1 }
            var shared = min(labelCount, questionCount)
            while shared > 0 {
                if labelsEqual(labels.dropFirst(labelCount - shared), question.dropFirst(questionCount - shared)) {
                    written = labelCount - shared
                    target = Self.offsetOfLabel(questionCount - shared, in: UnsafeRawBufferPointer(buffer),
                                                nameAt: DNSHeader.length)
                    break
                }
                shared -= 1
            }
        }
        var position = offset
        for label in labels.prefix(written) {
            guard position + 1 + label.count <= buffer.count else { return nil }
            buffer.setU8(position, UInt8(label.count))
            buffer.sub(position + 1, label.count).copyMemory(from: label)
            position += 1 + label.count
        }
        if target >= 0 {
            guard position + 2 <= buffer.count else { return nil }
            buffer.setU16(position, 0xc000 | UInt16(target))
            return position + 2
        }
        guard position + 1 <= buffer.count else { return nil }
        buffer.setU8(position, 0)
        return position + 1
    }

    /// The offset of label `index` of an uncompressed name at `nameAt`.
    static func offsetOfLabel(_ index: Int, in message: UnsafeRawBufferPointer, nameAt: Int) -> Int {
        var position = nameAt
        for _ in 0 ..< index { position += 1 + Int(message.u8(position)) }
        return position
    }
}

extension DNSMessageWriter {
    /// The whole answer of the fake-IP server in one call: a response to
    /// `query` carrying, for each address whose family the question asks for
    /// (IPv4 for A, IPv6 for AAAA, both for ANY, none otherwise), an answer
    /// owned by the question's name with `timeToLive`. Returns the length;
    /// throws `.malformed(.bufferTooSmall)` when the answers do not fit
    /// (a UDP responder may then send the question alone with TC set).
    public static func respond(to query: DNSMessageView, with addresses: some Sequence<IPAddress>,
                               timeToLive: UInt32, into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        var writer = try DNSMessageWriter(respondingTo: query, into: buffer)
        let asked = query.question?.type ?? .any
        for address in addresses {
            switch address {
            case let .v4(v4) where asked == .a || asked == .any:
                try writer.appendAnswer(.a(v4), timeToLive: timeToLive)
            case let .v6(v6) where asked == .aaaa || asked == .any:
                try writer.appendAnswer(.aaaa(v6), timeToLive: timeToLive)
            case .v4, .v6:
                continue
            }
        }
        return writer.length
    }
}
