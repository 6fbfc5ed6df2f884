/// How a message's body is delimited (RFC 9112 §6.3).
enum BodyFraming: Equatable {
    case none
    case length(Int)
    case chunked
    case untilClose
    case upgrade
}

enum HTTPFraming {
    /// The agreed Content-Length of valid fields, nil when absent or invalid.
    static func contentLength(_ headers: HTTPHeaders) -> Int? {
        (try? validatedContentLength(headers)) ?? nil
    }

    /// RFC 9110 §8.6: a list or repeated field is acceptable only when every
    /// element is the same number; anything else is how request smuggling
    /// starts, so it is refused rather than guessed.
    static func validatedContentLength(_ headers: HTTPHeaders) throws(HTTPParseError) -> Int? {
        var agreed: Int? = nil
        for field in headers where HTTPSyntax.equalsIgnoringCase(field.name, "Content-Length") {
            // An empty value is one empty element, refused below.
            try HTTPSyntax.forEachListElement(in: field.value) { (element) throws(HTTPParseError) -> Bool in
                var value = 0
                var digits = 0
                for byte in HTTPSyntax.trimmed(element).utf8 {
                    guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { throw .invalidContentLength }
                    let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                    let (sum, o2) = times10.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
                    guard !o1, !o2 else { throw .invalidContentLength }
                    value = sum
                    digits += 1
                }
                guard digits > 0 else { throw .invalidContentLength }
                if let agreed, agreed != value { throw .conflictingContentLength }
                agreed = value
                return true
            }
        }
        return agreed
    }

    static func transferCodings(_ headers: HTTPHeaders) -> [Substring] {
        headers.tokens("Transfer-Encoding")
    }

    static func isChunked(_ headers: HTTPHeaders) -> Bool {
        guard let last = transferCodings(headers).last else { return false }
        return HTTPSyntax.equalsIgnoringCase(last, "chunked")
    }

    static func keepAlive(version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        if headers.hasToken("close", in: "Connection") { return false }
        if version.major == 1 && version.minor == 0 { return headers.hasToken("keep-alive", in: "Connection") }
        return true
    }

    /// RFC 9112 §6.3 for a request: chunked if Transfer-Encoding ends with
    /// it, else Content-Length, else no body. Both at once is refused.
    static func requestFraming(_ head: HTTPRequestHead) throws(HTTPParseError) -> BodyFraming {
        let hasTransferEncoding = head.headers.contains("Transfer-Encoding")
        let length = try validatedContentLength(head.headers)
        if hasTransferEncoding {
            if length != nil { throw .contentLengthWithTransferEncoding }
            // §6.1: HTTP/1.0 has no transfer codings; a server could not
            // agree with us on where such a body ends.
            if head.version == .http1_0 { throw .unsupportedTransferEncoding }
            guard try chunkedOnlyAtEnd(head.headers) else { throw .unsupportedTransferEncoding }
            return .chunked
        }
        if let length { return .length(length) }
        return .none
    }

    /// RFC 9112 §6.3 for a response, given the request's method.
    static func responseFraming(_ head: HTTPResponseHead, requestMethod: HTTPMethod) throws(HTTPParseError)
        -> BodyFraming
    {
        if head.status == 101 { return .upgrade }
        if requestMethod == .connect && head.status >= 200 && head.status < 300 { return .upgrade }
        if head.isInformational || head.status == 204 || head.status == 304 || requestMethod == .head {
            return .none
        }
        let hasTransferEncoding = head.headers.contains("Transfer-Encoding")
        let length = try validatedContentLength(head.headers)
        if hasTransferEncoding {
            if length != nil { throw .contentLengthWithTransferEncoding }
            if head.version == .http1_0 { return .untilClose }
            // A final coding other than chunked: the body runs to the close.
            return try chunkedOnlyAtEnd(head.headers) ? .chunked : .untilClose
        }
        if let length { return .length(length) }
        return .untilClose
    }

    /// True when chunked is the last coding; chunked anywhere else (or twice)
    /// is an error. For a request, a last coding other than chunked leaves the
    /// length unknowable (§6.3 rule 4): an error too.
    private static func chunkedOnlyAtEnd(_ headers: HTTPHeaders) throws(HTTPParseError) -> Bool {
        let codings = transferCodings(headers)
        guard !codings.isEmpty else { throw .unsupportedTransferEncoding }
        for (i, coding) in codings.enumerated() {
            for byte in coding.utf8 where !HTTPSyntax.isTokenByte(byte) {
                // Parameters (`;q=`) are not valid in Transfer-Encoding of a message.
                throw .unsupportedTransferEncoding
            }
            if HTTPSyntax.equalsIgnoringCase(coding, "chunked") && i != codings.count - 1 {
                throw .unsupportedTransferEncoding
            }
        }
        return HTTPSyntax.equalsIgnoringCase(codings[codings.count - 1], "chunked")
    }
}
