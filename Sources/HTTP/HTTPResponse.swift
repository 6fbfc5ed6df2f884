/// Whole responses that Sluice writes itself: errors (400, 403, 502), mocks,
/// redirects.
public enum HTTPResponse {
    /// A complete response: status line, the given headers (less any
    /// Content-Length or Connection, which this sets), then the body.
    public static func simple(status: Int, reason: String? = nil, headers: HTTPHeaders = [:],
                              body: [UInt8] = [], keepAlive: Bool = false) -> [UInt8]
    {
        var head = HTTPResponseHead(status: status, reason: reason, headers: headers)
        head.headers.remove(name: "Content-Length")
        head.headers.remove(name: "Transfer-Encoding")
        head.headers.remove(name: "Connection")
        head.headers.add(name: "Content-Length", value: String(body.count))
        head.headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        var out = head.serialized()
        out.append(contentsOf: body)
        return out
    }

    public static func simple(status: Int, reason: String? = nil, headers: HTTPHeaders = [:],
                              text: String, keepAlive: Bool = false) -> [UInt8]
    {
        var headers = headers
        if !headers.contains("Content-Type") { headers.add(name: "Content-Type", value: "text/plain; charset=utf-8") }
        return simple(status: status, reason: reason, headers: headers, body: Array(text.utf8), keepAlive: keepAlive)
    }

    /// RFC 9110 §15 reason phrases; an empty phrase for codes it does not name.
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 103: "Early Hints"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 417: "Expectation Failed"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: ""
        }
    }
}
