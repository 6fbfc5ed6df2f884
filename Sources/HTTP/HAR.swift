import Crypto

// The HTTP Archive 1.2 model (http://www.softwareishard.com/blog/har-12-spec/),
// written with JSONWriter. Sluice's own fields start with `_`, as the spec
// asks of extensions. Times are milliseconds as Double; -1 means "does not apply".

/// The whole archive: `{"log": {...}}`.
public struct HARLog: Sendable, Equatable {
    public var creatorName: String
    public var creatorVersion: String
    public var entries: [HAREntry]
    public var comment: String?

    public init(creatorName: String = "sluice", creatorVersion: String, entries: [HAREntry] = [], comment: String? = nil) {
        self.creatorName = creatorName
        self.creatorVersion = creatorVersion
        self.entries = entries
        self.comment = comment
    }

    public func json(pretty: Bool = false) -> String {
        var json = JSONWriter(pretty: pretty)
        write(into: &json)
        return json.text
    }

    // MARK: Streaming
    // A document written as it grows (`--har`): `streamHead()`, then each
    // entry's `streamed()` bytes after `streamSeparator(first:)`, then
    // `streamTail(empty:)`. Together they are exactly `json(pretty: true)` of
    // the same entries, so a writer that rewrites the tail after each entry
    // keeps a complete document on disk at every step.

    /// Everything before the first entry: up to the `[` of `entries`.
    public func streamHead() -> [UInt8] {
        var json = JSONWriter(pretty: true)
        writeHead(into: &json)
        return json.bytes
    }

    /// What goes before an entry.
    public static func streamSeparator(first: Bool) -> [UInt8] {
        Array((first ? "\n" : ",\n").utf8) + Array(repeating: UInt8(ascii: " "), count: 2 * entryDepth)
    }

    /// Everything after the last entry (the comment included), and a newline.
    public func streamTail(empty: Bool) -> [UInt8] {
        var tail = empty ? "]" : "\n" + String(repeating: " ", count: 2 * (Self.entryDepth - 1)) + "]"
        if let comment {
            var json = JSONWriter()
            json.string(comment)
            tail += ",\n    \"comment\": " + json.text
        }
        return Array((tail + "\n  }\n}\n").utf8)
    }

    /// How deep entries sit: the document, `log`, `entries`.
    static let entryDepth = 3

    private func writeHead(into json: inout JSONWriter) {
        json.beginObject()
        json.key("log")
        json.beginObject()
        json.field("version", "1.2")
        json.key("creator")
        json.beginObject()
        json.field("name", creatorName)
        json.field("version", creatorVersion)
        json.endObject()
        json.key("pages")
        json.beginArray()
        json.endArray()
        json.key("entries")
        json.beginArray()
    }

    public func write(into json: inout JSONWriter) {
        writeHead(into: &json)
        for entry in entries { entry.write(into: &json) }
        json.endArray()
        if let comment { json.field("comment", comment) }
        json.endObject()
        json.endObject()
    }
}

public struct HARNameValue: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    func write(into json: inout JSONWriter) {
        json.beginObject()
        json.field("name", name)
        json.field("value", value)
        json.endObject()
    }
}

public struct HARCookie: Sendable, Equatable {
    public var name: String
    public var value: String
    public var path: String?
    public var domain: String?
    public var expires: String?
    public var httpOnly: Bool?
    public var secure: Bool?

    public init(name: String, value: String, path: String? = nil, domain: String? = nil, expires: String? = nil,
                httpOnly: Bool? = nil, secure: Bool? = nil)
    {
        self.name = name
        self.value = value
        self.path = path
        self.domain = domain
        self.expires = expires
        self.httpOnly = httpOnly
        self.secure = secure
    }

    /// The pairs of a request's `Cookie: a=1; b=2`.
    public static func fromCookieHeader(_ value: String) -> [HARCookie] {
        value.split(separator: ";").compactMap { pair in
            let trimmed = HTTPSyntax.trimmed(pair)
            guard let eq = trimmed.firstIndex(of: "="), eq != trimmed.startIndex else { return nil }
            return HARCookie(name: String(trimmed[..<eq]), value: String(trimmed[trimmed.index(after: eq)...]))
        }
    }

    /// One response `Set-Cookie: name=value; Path=/; Domain=d; Expires=…; HttpOnly; Secure`.
    public static func fromSetCookie(_ value: String) -> HARCookie? {
        var parts = value.split(separator: ";", omittingEmptySubsequences: false).makeIterator()
        guard let first = parts.next().map(HTTPSyntax.trimmed), let eq = first.firstIndex(of: "="),
              eq != first.startIndex
        else { return nil }
        var cookie = HARCookie(name: String(first[..<eq]), value: String(first[first.index(after: eq)...]))
        while let part = parts.next().map(HTTPSyntax.trimmed) {
            let eq = part.firstIndex(of: "=")
            let name = eq.map { part[..<$0] } ?? part
            let attribute = eq.map { String(part[part.index(after: $0)...]) }
            if HTTPSyntax.equalsIgnoringCase(name, "path") { cookie.path = attribute }
            else if HTTPSyntax.equalsIgnoringCase(name, "domain") { cookie.domain = attribute }
            else if HTTPSyntax.equalsIgnoringCase(name, "expires") { cookie.expires = attribute }
            else if HTTPSyntax.equalsIgnoringCase(name, "httponly") { cookie.httpOnly = true }
            else if HTTPSyntax.equalsIgnoringCase(name, "secure") { cookie.secure = true }
        }
        return cookie
    }

    func write(into json: inout JSONWriter) {
        json.beginObject()
        json.field("name", name)
        json.field("value", value)
        if let path { json.field("path", path) }
        if let domain { json.field("domain", domain) }
        if let expires { json.field("expires", expires) }
        if let httpOnly { json.field("httpOnly", httpOnly) }
        if let secure { json.field("secure", secure) }
        json.endObject()
    }
}

/// A body as HAR carries it: UTF-8 text as is, anything else in base64.
public struct HARBody: Sendable, Equatable {
    public var text: String
    /// "base64", or nil for text.
    public var encoding: String?

    public init(text: String, encoding: String? = nil) {
        self.text = text
        self.encoding = encoding
    }

    public init(_ bytes: [UInt8]) {
        if let text = String(validating: bytes, as: UTF8.self) {
            self.init(text: text)
        } else {
            self.init(text: Base64.encode(bytes), encoding: "base64")
        }
    }
}

public struct HARPostData: Sendable, Equatable {
    public var mimeType: String
    public var body: HARBody

    public init(mimeType: String, body: HARBody) {
        self.mimeType = mimeType
        self.body = body
    }

    func write(into json: inout JSONWriter) {
        json.beginObject()
        json.field("mimeType", mimeType)
        json.key("params")
        json.beginArray()
        json.endArray()
        json.field("text", body.text)
        // HAR 1.2 gives postData no encoding field; an extension keeps binary bodies readable.
        if let encoding = body.encoding { json.field("_encoding", encoding) }
        json.endObject()
    }
}

public struct HARRequest: Sendable, Equatable {
    public var method: String
    public var url: String
    public var httpVersion: String
    public var cookies: [HARCookie]
    public var headers: [HARNameValue]
    public var queryString: [HARNameValue]
    public var postData: HARPostData?
    /// Bytes of the head on the wire; -1 if unknown.
    public var headersSize: Int
    /// Bytes of the body on the wire; -1 if unknown.
    public var bodySize: Int

    public init(method: String, url: String, httpVersion: String = "HTTP/1.1", cookies: [HARCookie] = [],
                headers: [HARNameValue] = [], queryString: [HARNameValue] = [], postData: HARPostData? = nil,
                headersSize: Int = -1, bodySize: Int = -1)
    {
        self.method = method
        self.url = url
        self.httpVersion = httpVersion
        self.cookies = cookies
        self.headers = headers
        self.queryString = queryString
        self.postData = postData
        self.headersSize = headersSize
        self.bodySize = bodySize
    }

    /// From a parsed head: cookies from `Cookie`, the query from the URL,
    /// headersSize from the serialized head. `body` (decoded, if captured)
    /// becomes postData when not empty.
    public init(_ head: HTTPRequestHead, url: String? = nil, body: [UInt8]? = nil, bodySize: Int = -1) {
        let url = url ?? head.absoluteURL() ?? head.target
        var postData: HARPostData? = nil
        if let body, !body.isEmpty {
            postData = HARPostData(mimeType: head.headers["Content-Type"] ?? "", body: HARBody(body))
        }
        self.init(method: head.method.rawValue, url: url, httpVersion: head.version.description,
                  cookies: head.headers.values("Cookie").flatMap(HARCookie.fromCookieHeader),
                  headers: head.headers.map { HARNameValue(name: $0.name, value: $0.value) },
                  queryString: HARRequest.queryString(of: url), postData: postData,
                  headersSize: head.serialized().count, bodySize: bodySize)
    }

    /// `?a=1&b=x%20y` → [a: 1, b: x y]; pairs that do not percent-decode
    /// to UTF-8 stay as written.
    public static func queryString(of url: String) -> [HARNameValue] {
        guard let question = url.firstIndex(of: "?") else { return [] }
        var query = url[url.index(after: question)...]
        if let hash = query.firstIndex(of: "#") { query = query[..<hash] }
        return query.split(separator: "&").map { pair in
            let eq = pair.firstIndex(of: "=")
            let name = eq.map { pair[..<$0] } ?? pair
            let value = eq.map { pair[pair.index(after: $0)...] } ?? ""
            return HARNameValue(name: percentDecoded(name), value: percentDecoded(value))
        }
    }

    static func percentDecoded(_ s: Substring) -> String {
        var out: [UInt8] = []
        let bytes = Array(s.utf8)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "+") {
                out.append(0x20)
            } else if b == UInt8(ascii: "%"), i + 2 < bytes.count, let hi = hex(bytes[i + 1]), let lo = hex(bytes[i + 2]) {
                out.append(hi << 4 | lo)
                i += 2
            } else {
                out.append(b)
            }
            i += 1
        }
        return String(validating: out, as: UTF8.self) ?? String(s)
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    func write(into json: inout JSONWriter) {
        json.beginObject()
        json.field("method", method)
        json.field("url", url)
        json.field("httpVersion", httpVersion)
        json.key("cookies")
        json.beginArray()
        for cookie in cookies { cookie.write(into: &json) }
        json.endArray()
        json.key("headers")
        json.beginArray()
        for header in headers { header.write(into: &json) }
        json.endArray()
        json.key("queryString")
        json.beginArray()
        for item in queryString { item.write(into: &json) }
        json.endArray()
        if let postData {
            json.key("postData")
            postData.write(into: &json)
        }
        json.field("headersSize", headersSize)
        json.field("bodySize", bodySize)
        json.endObject()
    }
}

public struct HARContent: Sendable, Equatable {
    /// Length of the decoded body.
    public var size: Int
    /// HAR 1.2: the bytes its Content-Encoding saved (`size` less the
    /// encoded length); nil when it was not decoded.
    public var compression: Int?
    public var mimeType: String
    /// nil when the body was not captured.
    public var body: HARBody?

    public init(size: Int, mimeType: String, body: HARBody? = nil, compression: Int? = nil) {
        self.size = size
        self.mimeType = mimeType
        self.body = body
        self.compression = compression
    }

    func write(into json: inout JSONWriter) {
        json.beginObject()
        json.field("size", size)
        if let compression { json.field("compression", compression) }
        json.field("mimeType", mimeType)
        if let body {
            json.field("text", body.text)
            if let encoding = body.encoding { json.field("encoding", encoding) }
        }
        json.endObject()
    }
}

public struct HARResponse: Sendable, Equatable {
    public var status: Int
    public var statusText: String
    public var httpVersion: String
    public var cookies: [HARCookie]
    public var headers: [HARNameValue]
    public var content: HARContent
    public var redirectURL: String
    public var headersSize: Int
    public var bodySize: Int

    public init(status: Int, statusText: String, httpVersion: String = "HTTP/1.1", cookies: [HARCookie] = [],
                headers: [HARNameValue] = [], content: HARContent, redirectURL: String = "", headersSize: Int = -1,
                bodySize: Int = -1)
    {
        self.status = status
        self.statusText = statusText
        self.httpVersion = httpVersion
        self.cookies = cookies
        self.headers = headers
        self.content = content
        self.redirectURL = redirectURL
        self.headersSize = headersSize
        self.bodySize = bodySize
    }

    /// From a parsed head; `body` is the decoded body if captured.
    /// `contentSize`: the body's length as its data (without chunk framing),
    /// all of it; `body` may hold only its first bytes.
    public init(_ head: HTTPResponseHead, body: [UInt8]? = nil, bodySize: Int = -1, contentSize: Int? = nil) {
        let content = HARContent(size: contentSize ?? body?.count ?? max(bodySize, 0), mimeType: head.headers["Content-Type"] ?? "",
                                 body: body.map(HARBody.init))
        self.init(status: head.status, statusText: head.reason, httpVersion: head.version.description,
                  cookies: head.headers.values("Set-Cookie").compactMap(HARCookie.fromSetCookie),
                  headers: head.headers.map { HARNameValue(name: $0.name, value: $0.value) },
                  content: content, redirectURL: head.location ?? "", headersSize: head.serialized().count,
                  bodySize: bodySize)
    }

    func write(into json: inout JSONWriter) {
        json.beginObject()
        json.field("status", status)
        json.field("statusText", statusText)
        json.field("httpVersion", httpVersion)
        json.key("cookies")
        json.beginArray()
        for cookie in cookies { cookie.write(into: &json) }
        json.endArray()
        json.key("headers")
        json.beginArray()
        for header in headers { header.write(into: &json) }
        json.endArray()
        json.key("content")
        content.write(into: &json)
        json.field("redirectURL", redirectURL)
        json.field("headersSize", headersSize)
        json.field("bodySize", bodySize)
        json.endObject()
    }
}

/// Milliseconds per phase; -1 where a phase does not apply (`send`, `wait`
/// and `receive` are required and never -1).
public struct HARTimings: Sendable, Equatable {
    public var blocked: Double
    public var dns: Double
    public var connect: Double
    public var send: Double
    public var wait: Double
    public var receive: Double
    public var ssl: Double

    public init(blocked: Double = -1, dns: Double = -1, connect: Double = -1, send: Double = 0, wait: Double = 0,
                receive: Double = 0, ssl: Double = -1)
    {
        self.blocked = blocked
        self.dns = dns
        self.connect = connect
        self.send = send
        self.wait = wait
        self.receive = receive
        self.ssl = ssl
    }

    /// The entry's `time`: the sum of the phases that apply (ssl is inside connect).
    public var total: Double {
        [blocked, dns, connect, send, wait, receive].filter { $0 > 0 }.reduce(0, +)
    }

    func write(into json: inout JSONWriter) {
        json.beginObject()
        json.field("blocked", blocked)
        json.field("dns", dns)
        json.field("connect", connect)
        json.field("send", send)
        json.field("wait", wait)
        json.field("receive", receive)
        json.field("ssl", ssl)
        json.endObject()
    }
}

/// One WebSocket message in the form Chrome's HAR export gives it
/// (`_webSocketMessages`): who sent it, when, its opcode, and its data as
/// text (opcode 1) or base64 (opcode 2).
public struct HARWebSocketMessage: Sendable, Equatable {
    /// "send" (the app's) or "receive" (the server's).
    public var type: String
    /// Seconds since the Unix epoch.
    public var time: Double
    public var opcode: Int
    public var data: String
    /// The message's whole length, when `data` holds only its first bytes.
    public var length: Int?
    /// Its data is permessage-deflate's (RFC 7692), as it went on the wire.
    public var compressed: Bool

    public init(type: String, time: Double, opcode: Int, data: String, length: Int? = nil, compressed: Bool = false) {
        self.type = type
        self.time = time
        self.opcode = opcode
        self.data = data
        self.length = length
        self.compressed = compressed
    }

    func write(into json: inout JSONWriter) {
        json.beginObject()
        json.field("type", type)
        json.field("time", time)
        json.field("opcode", opcode)
        json.field("data", data)
        if let length { json.field("_length", length) }
        if compressed { json.field("_compressed", true) }
        json.endObject()
    }
}

public struct HAREntry: Sendable, Equatable {
    /// ISO 8601, e.g. `2026-11-30T15:40:50.123Z`: formatted by the caller,
    /// since this layer has no clock.
    public var startedDateTime: String
    /// Total milliseconds; nil takes the sum of the timings.
    public var time: Double?
    public var request: HARRequest
    public var response: HARResponse
    public var timings: HARTimings
    public var serverIPAddress: String?
    /// The client port or flow id that carried it.
    public var connection: String?
    public var comment: String?
    /// The rule that matched, as written in the rule file.
    public var rule: String?
    /// What the rule did: allow, block, rewrite, mock, redirect...
    public var policy: String?
    /// The URL before a rewrite.
    public var rewrittenFrom: String?
    /// True when Sluice answered itself and no server saw the request.
    public var mocked: Bool?
    /// The program that sent it (`curl[4242]`), when an owner rule made Sluice ask.
    public var process: String?
    /// How many times Sluice sent the request again on a new connection
    /// (the origin closed with it unanswered); nil when it went once.
    public var retries: Int?
    /// The [Body Rewrite] lines that changed its bodies; nil when none did.
    public var bodyRewrites: [Int]?
    /// Chrome's `_resourceType`: "websocket" for an upgrade to WebSocket.
    public var resourceType: String?
    /// Chrome's `_webSocketMessages`: the messages both ways after the 101, in order.
    public var webSocketMessages: [HARWebSocketMessage]?

    public init(startedDateTime: String, time: Double? = nil, request: HARRequest, response: HARResponse,
                timings: HARTimings = HARTimings(), serverIPAddress: String? = nil, connection: String? = nil,
                comment: String? = nil, rule: String? = nil, policy: String? = nil, rewrittenFrom: String? = nil,
                mocked: Bool? = nil, process: String? = nil)
    {
        self.startedDateTime = startedDateTime
        self.time = time
        self.request = request
        self.response = response
        self.timings = timings
        self.serverIPAddress = serverIPAddress
        self.connection = connection
        self.comment = comment
        self.rule = rule
        self.policy = policy
        self.rewrittenFrom = rewrittenFrom
        self.mocked = mocked
        self.process = process
    }

    /// One entry as a JSON object, for logs written entry by entry.
    public func json(pretty: Bool = false) -> String {
        var json = JSONWriter(pretty: pretty)
        write(into: &json)
        return json.text
    }

    /// The entry as it sits in a pretty document's `entries` (`HARLog.streamHead`).
    public func streamed() -> [UInt8] {
        var json = JSONWriter(pretty: true, indentLevel: HARLog.entryDepth)
        write(into: &json)
        return json.bytes
    }

    public func write(into json: inout JSONWriter) {
        json.beginObject()
        json.field("startedDateTime", startedDateTime)
        json.field("time", time ?? timings.total)
        json.key("request")
        request.write(into: &json)
        json.key("response")
        response.write(into: &json)
        json.key("cache")
        json.beginObject()
        json.endObject()
        json.key("timings")
        timings.write(into: &json)
        if let serverIPAddress { json.field("serverIPAddress", serverIPAddress) }
        if let connection { json.field("connection", connection) }
        if let comment { json.field("comment", comment) }
        if let rule { json.field("_rule", rule) }
        if let policy { json.field("_policy", policy) }
        if let rewrittenFrom { json.field("_rewrittenFrom", rewrittenFrom) }
        if let mocked { json.field("_mocked", mocked) }
        if let process { json.field("_process", process) }
        if let retries { json.field("_retries", retries) }
        if let bodyRewrites {
            json.key("_bodyRewrites")
            json.beginArray()
            for line in bodyRewrites { json.int(line) }
            json.endArray()
        }
        if let resourceType { json.field("_resourceType", resourceType) }
        if let webSocketMessages {
            json.key("_webSocketMessages")
            json.beginArray()
            for message in webSocketMessages { message.write(into: &json) }
            json.endArray()
        }
        json.endObject()
    }
}
