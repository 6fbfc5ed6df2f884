/// A parsed (or built) status line and header section.
public struct HTTPResponseHead: Sendable, Equatable, CustomStringConvertible {
    public var version: HTTPVersion
    public var status: Int
    public var reason: String
    public var headers: HTTPHeaders

    public init(version: HTTPVersion = .http1_1, status: Int, reason: String? = nil, headers: HTTPHeaders = [:]) {
        self.version = version
        self.status = status
        self.reason = reason ?? HTTPResponse.reasonPhrase(status)
        self.headers = headers
    }

    /// 1xx: an interim response; the final one follows (RFC 9110 §15.2).
    public var isInformational: Bool { status >= 100 && status < 200 }

    public var contentLength: Int? { HTTPFraming.contentLength(headers) }
    public var isChunked: Bool { HTTPFraming.isChunked(headers) }
    public var keepAlive: Bool { HTTPFraming.keepAlive(version: version, headers: headers) }

    /// The protocol a 101 switches to.
    public var upgrade: String? { headers["Upgrade"] }

    /// `Location`, for redirects.
    public var location: String? { headers["Location"] }

    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + headers.count * 32)
        version.serialize(into: &out)
        out.append(0x20)
        let code = min(max(status, 0), 999)
        out.append(UInt8(ascii: "0") + UInt8(code / 100))
        out.append(UInt8(ascii: "0") + UInt8(code / 10 % 10))
        out.append(UInt8(ascii: "0") + UInt8(code % 10))
        out.append(0x20)
        for byte in reason.utf8 { out.append(HTTPSyntax.isFieldValueByte(byte) ? byte : 0x20) }
        out.append(0x0D)
        out.append(0x0A)
        headers.serialize(into: &out)
        out.append(0x0D)
        out.append(0x0A)
        return out
    }

    /// `HTTP/1.1 200 OK length=5`.
    public var description: String {
        var s = "\(version) \(status)"
        if !reason.isEmpty { s += " \(reason)" }
        if let length = contentLength { s += " length=\(length)" }
        if isChunked { s += " chunked" }
        if status == 101, let upgrade { s += " upgrade=\(upgrade)" }
        if let location { s += " location=\(location)" }
        return s
    }
}
