// DNS messages (RFC 1035 §4.1), read in place.

/// One entry of the question section, read in place.
public struct DNSQuestionView: CustomStringConvertible {
    public let name: DNSNameView
    /// QTYPE
    public let type: DNSType
    /// QCLASS
    public let `class`: DNSClass

    @inlinable
    init(name: DNSNameView, type: DNSType, class: DNSClass) {
        self.name = name
        self.type = type
        self.class = `class`
    }

    /// tcpdump's form: `A? example.test.`, with the class when it is not IN.
    public var description: String {
        let classText = `class` == .internet ? "" : " \(`class`)"
        return "\(type)\(classText)? \(name)"
    }
}

/// One resource record, read in place.
public struct DNSRecordView: CustomStringConvertible {
    /// The RDATA of the types Sluice reads; anything else stays raw bytes.
    public enum Data: CustomStringConvertible {
        case a(IPv4Address)
        case aaaa(IPv6Address)
        case cname(DNSNameView)
        case ptr(DNSNameView)
        case other(UnsafeRawBufferPointer)

        public var description: String {
            switch self {
            case let .a(address): return address.description
            case let .aaaa(address): return address.description
            case let .cname(name): return name.description
            case let .ptr(name): return name.description
            case let .other(bytes): return "[\(bytes.count) bytes]"
            }
        }
    }

    public let name: DNSNameView
    public let type: DNSType
    public let `class`: DNSClass
    public let timeToLive: UInt32
    /// The RDATA bytes as they are on the wire (names inside may be compressed).
    public let rdata: UnsafeRawBufferPointer
    /// Where RDATA starts in the message.
    public let rdataOffset: Int

    /// A and AAAA are decoded in class IN only, where their layout is defined;
    /// CNAME and PTR in any class.
    public var data: Data {
        switch type {
        case .a where `class` == .internet && rdata.count == 4:
            return .a(IPv4Address.load(rdata, 0))
        case .aaaa where `class` == .internet && rdata.count == 16:
            return .aaaa(IPv6Address.load(rdata, 0))
        case .cname:
            return .cname(DNSNameView(name.message, at: rdataOffset))
        case .ptr:
            return .ptr(DNSNameView(name.message, at: rdataOffset))
        default:
            return .other(rdata)
        }
    }

    /// tcpdump's form without the owner name: `A 198.18.0.1`, `CNAME api.example.test.`;
    /// other types print their type and RDATA length.
    public var description: String {
        let classText = `class` == .internet ? "" : " \(`class`)"
        return "\(type)\(classText) \(data)"
    }

    /// Validates the record at `offset` and returns the offset after it.
    static func validate(_ message: UnsafeRawBufferPointer, at offset: Int) throws(WireError) -> Int {
        let fixed = try DNSWireName.validate(message, at: offset)
        try require(fixed + 10, in: message, .dns)
        let type = DNSType(rawValue: message.u16(fixed))
        let recordClass = DNSClass(rawValue: message.u16(fixed + 2))
        let rdataOffset = fixed + 10
        let rdataEnd = rdataOffset + Int(message.u16(fixed + 8))
        try require(rdataEnd, in: message, .dns)
        switch type {
        case .a where recordClass == .internet:
            guard rdataEnd - rdataOffset == 4 else { throw .malformed(layer: .dns, reason: .rdataLength) }
        case .aaaa where recordClass == .internet:
            guard rdataEnd - rdataOffset == 16 else { throw .malformed(layer: .dns, reason: .rdataLength) }
        case .cname, .ptr:
            // The name must fill RDATA exactly: not stop short, not run on into the next record.
            guard rdataEnd > rdataOffset else { throw .malformed(layer: .dns, reason: .rdataLength) }
            let nameEnd = try DNSWireName.validate(message, at: rdataOffset)
            guard nameEnd == rdataEnd else { throw .malformed(layer: .dns, reason: .rdataLength) }
        default:
            break
        }
        return rdataEnd
    }

    /// Reads a record that `validate` accepted.
    @usableFromInline
    init(_ message: UnsafeRawBufferPointer, at offset: Int) {
        name = DNSNameView(message, at: offset)
        let fixed = DNSWireName.skip(message, at: offset)
        type = DNSType(rawValue: message.u16(fixed))
        `class` = DNSClass(rawValue: message.u16(fixed + 2))
        timeToLive = message.u32(fixed + 4)
        rdataOffset = fixed + 10
        rdata = message.sub(rdataOffset, Int(message.u16(fixed + 8)))
    }
}

/// The questions of a validated message.
public struct DNSQuestionSequence: Sequence {
    @usableFromInline let message: UnsafeRawBufferPointer
    @usableFromInline let start: Int
    public let count: Int

    @inlinable
    init(_ message: UnsafeRawBufferPointer, start: Int, count: Int) {
        self.message = message
        self.start = start
        self.count = count
    }

    public struct Iterator: IteratorProtocol {
        @usableFromInline let message: UnsafeRawBufferPointer
        @usableFromInline var offset: Int
        @usableFromInline var remaining: Int

        @inlinable
        init(message: UnsafeRawBufferPointer, offset: Int, remaining: Int) {
            self.message = message
            self.offset = offset
            self.remaining = remaining
        }

        @inlinable
        public mutating func next() -> DNSQuestionView? {
            guard remaining > 0 else { return nil }
            let fixed = DNSWireName.skip(message, at: offset)
            guard fixed + 4 <= message.count else { return nil }
            remaining -= 1
            let question = DNSQuestionView(name: DNSNameView(message, at: offset),
                                           type: DNSType(rawValue: message.u16(fixed)),
                                           class: DNSClass(rawValue: message.u16(fixed + 2)))
            offset = fixed + 4
            return question
        }
    }

    @inlinable public var underestimatedCount: Int { count }
    @inlinable public func makeIterator() -> Iterator { Iterator(message: message, offset: start, remaining: count) }
}

/// The records of one section of a validated message.
public struct DNSRecordSequence: Sequence {
    @usableFromInline let message: UnsafeRawBufferPointer
    @usableFromInline let start: Int
    public let count: Int

    @inlinable
    init(_ message: UnsafeRawBufferPointer, start: Int, count: Int) {
        self.message = message
        self.start = start
        self.count = count
    }

    public struct Iterator: IteratorProtocol {
        @usableFromInline let message: UnsafeRawBufferPointer
        @usableFromInline var offset: Int
        @usableFromInline var remaining: Int

        @inlinable
        init(message: UnsafeRawBufferPointer, offset: Int, remaining: Int) {
            self.message = message
            self.offset = offset
            self.remaining = remaining
        }

        @inlinable
        public mutating func next() -> DNSRecordView? {
            guard remaining > 0 else { return nil }
            let fixed = DNSWireName.skip(message, at: offset)
            guard fixed + 10 <= message.count,
                  fixed + 10 + Int(message.u16(fixed + 8)) <= message.count else { return nil }
            remaining -= 1
            let record = DNSRecordView(message, at: offset)
            offset = record.rdataOffset + record.rdata.count
            return record
        }
    }

    @inlinable public var underestimatedCount: Int { count }
    @inlinable public func makeIterator() -> Iterator { Iterator(message: message, offset: start, remaining: count) }
}

/// A zero-copy view of a DNS message. `init` walks every section once,
/// checking every name (labels, length, pointers) and every record's length
/// (and the RDATA of A, AAAA, CNAME and PTR); afterwards iterating cannot trap.
/// Bytes after the last record are ignored.
public struct DNSMessageView: CustomStringConvertible {
    public let bytes: UnsafeRawBufferPointer
    public let header: DNSHeader
    @usableFromInline let answerStart: Int
    @usableFromInline let authorityStart: Int
    @usableFromInline let additionalStart: Int
    /// Where the last record ends: the length of the message proper.
    public let length: Int

    public init(_ bytes: UnsafeRawBufferPointer) throws(WireError) {
        header = try DNSHeader.parse(bytes)
        var offset = DNSHeader.length
        for _ in 0 ..< header.questionCount {
            offset = try DNSWireName.validate(bytes, at: offset) + 4
            try require(offset, in: bytes, .dns)
        }
        answerStart = offset
        for _ in 0 ..< header.answerCount { offset = try DNSRecordView.validate(bytes, at: offset) }
        authorityStart = offset
        for _ in 0 ..< header.authorityCount { offset = try DNSRecordView.validate(bytes, at: offset) }
        additionalStart = offset
        for _ in 0 ..< header.additionalCount { offset = try DNSRecordView.validate(bytes, at: offset) }
        length = offset
        self.bytes = bytes
    }

    @inlinable public var id: UInt16 { header.id }

    @inlinable
    public var questions: DNSQuestionSequence {
        DNSQuestionSequence(bytes, start: DNSHeader.length, count: Int(header.questionCount))
    }

    @inlinable
    public var answers: DNSRecordSequence { DNSRecordSequence(bytes, start: answerStart, count: Int(header.answerCount)) }

    @inlinable
    public var authorities: DNSRecordSequence {
        DNSRecordSequence(bytes, start: authorityStart, count: Int(header.authorityCount))
    }

    @inlinable
    public var additionals: DNSRecordSequence {
        DNSRecordSequence(bytes, start: additionalStart, count: Int(header.additionalCount))
    }

    /// The first question: what a stub resolver asks.
    @inlinable
    public var question: DNSQuestionView? {
        var iterator = questions.makeIterator()
        return iterator.next()
    }

    /// tcpdump's one-line summary; the figure in parentheses is the buffer's length.
    /// Query: `40000+ [1au] A? example.test. (41)`.
    /// Response: `40000* 1/0/0 A 198.18.0.1 (46)`, answers separated by ", ".
    public var description: String {
        var text = header.flagText
        if header.isResponse {
            if header.questionCount != 1 { text += " [\(header.questionCount)q]" }
            text += " \(header.answerCount)/\(header.authorityCount)/\(header.additionalCount)"
            var first = true
            for answer in answers {
                text += first ? " " : ", "
                text += answer.description
                first = false
            }
        } else {
            if header.answerCount != 0 { text += " [\(header.answerCount)a]" }
            if header.questionCount != 1 { text += " [\(header.questionCount)q]" }
            if header.authorityCount != 0 { text += " [\(header.authorityCount)n]" }
            if header.additionalCount != 0 { text += " [\(header.additionalCount)au]" }
            for question in questions { text += " \(question)" }
        }
        return text + " (\(bytes.count))"
    }
}
