/// The fixed 12-byte header of a DNS message (RFC 1035 §4.1.1; AD and CD
/// from RFC 4035 §3.2). The Z bit is ignored on input and sent as zero.
public struct DNSHeader: Hashable, Sendable, CustomStringConvertible {
    public static let length = 12

    public var id: UInt16
    /// QR: false for a query, true for a response.
    public var isResponse: Bool
    public var opcode: DNSOpcode
    /// AA
    public var authoritativeAnswer: Bool
    /// TC
    public var truncated: Bool
    /// RD
    public var recursionDesired: Bool
    /// RA
    public var recursionAvailable: Bool
    /// AD
    public var authenticData: Bool
    /// CD
    public var checkingDisabled: Bool
    /// RCODE
    public var responseCode: DNSResponseCode
    public var questionCount: UInt16
    public var answerCount: UInt16
    public var authorityCount: UInt16
    public var additionalCount: UInt16

    @inlinable
    public init(id: UInt16, isResponse: Bool = false, opcode: DNSOpcode = .query, authoritativeAnswer: Bool = false,
                truncated: Bool = false, recursionDesired: Bool = false, recursionAvailable: Bool = false,
                authenticData: Bool = false, checkingDisabled: Bool = false,
                responseCode: DNSResponseCode = .noError, questionCount: UInt16 = 0, answerCount: UInt16 = 0,
                authorityCount: UInt16 = 0, additionalCount: UInt16 = 0) {
        self.id = id
        self.isResponse = isResponse
        self.opcode = opcode
        self.authoritativeAnswer = authoritativeAnswer
        self.truncated = truncated
        self.recursionDesired = recursionDesired
        self.recursionAvailable = recursionAvailable
        self.authenticData = authenticData
        self.checkingDisabled = checkingDisabled
        self.responseCode = responseCode
        self.questionCount = questionCount
        self.answerCount = answerCount
        self.authorityCount = authorityCount
        self.additionalCount = additionalCount
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> DNSHeader {
        try require(length, in: bytes, .dns)
        let b2 = bytes.u8(2), b3 = bytes.u8(3)
        return DNSHeader(
            id: bytes.u16(0), isResponse: b2 & 0x80 != 0, opcode: DNSOpcode(rawValue: b2 >> 3 & 0x0f),
            authoritativeAnswer: b2 & 0x04 != 0, truncated: b2 & 0x02 != 0, recursionDesired: b2 & 0x01 != 0,
            recursionAvailable: b3 & 0x80 != 0, authenticData: b3 & 0x20 != 0, checkingDisabled: b3 & 0x10 != 0,
            responseCode: DNSResponseCode(rawValue: b3 & 0x0f), questionCount: bytes.u16(4),
            answerCount: bytes.u16(6), authorityCount: bytes.u16(8), additionalCount: bytes.u16(10))
    }

    /// Writes the 12 bytes; throws when the opcode or response code needs more than 4 bits.
    public func emit(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        guard opcode.rawValue <= 0x0f, responseCode.rawValue <= 0x0f else {
            throw .malformed(layer: .dns, reason: .fieldRange)
        }
        try require(Self.length, in: buffer, .dns)
        var b2 = opcode.rawValue << 3
        if isResponse { b2 |= 0x80 }
        if authoritativeAnswer { b2 |= 0x04 }
        if truncated { b2 |= 0x02 }
        if recursionDesired { b2 |= 0x01 }
        var b3 = responseCode.rawValue
        if recursionAvailable { b3 |= 0x80 }
        if authenticData { b3 |= 0x20 }
        if checkingDisabled { b3 |= 0x10 }
        buffer.setU16(0, id)
        buffer.setU8(2, b2)
        buffer.setU8(3, b3)
        buffer.setU16(4, questionCount)
        buffer.setU16(6, answerCount)
        buffer.setU16(8, authorityCount)
        buffer.setU16(10, additionalCount)
        return Self.length
    }

    /// tcpdump's marks after the id. A query: opcode, "+" for RD, "%" for CD.
    /// A response: opcode, rcode, "*" for AA, "-" when RA is clear, "|" for TC, "$" for AD.
    public var flagText: String {
        if isResponse {
            return "\(id)\(opcode)\(responseCode)\(authoritativeAnswer ? "*" : "")\(recursionAvailable ? "" : "-")"
                + "\(truncated ? "|" : "")\(authenticData ? "$" : "")"
        }
        return "\(id)\(opcode)\(recursionDesired ? "+" : "")\(checkingDisabled ? "%" : "")"
    }

    /// The flag text and the four counts, question/answer/authority/additional:
    /// `40000* 1/1/0/0`.
    public var description: String {
        "\(flagText) \(questionCount)/\(answerCount)/\(authorityCount)/\(additionalCount)"
    }
}
