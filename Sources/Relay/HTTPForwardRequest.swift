/// Rewrites a plain-HTTP request the engine has parsed into the form an
/// upstream forward proxy expects (RFC 9112 §3.2.2: absolute-form), and adds
/// Proxy-Authorization. Takes primitive inputs, so any head type can feed it.
public enum HTTPForwardRequest {
    /// The head bytes to send to the proxy, ending with the blank line; the
    /// body (if any) follows unchanged.
    ///
    /// - `target`: the request-target as the app sent it: origin-form (`/path?q`),
    ///   `*` (server-wide OPTIONS), or already absolute (`http://…`, kept as is).
    /// - `host`: the Host header's value (or the fake-IP name when the app sent none).
    /// - `headers`: the app's header lines in order. An app's own Proxy-Authorization
    ///   is dropped (it was not meant for our upstream), and so is Proxy-Connection.
    ///
    /// Throws when a piece would break the request line or a header line (a
    /// space or control byte where none may be), so an app cannot smuggle a
    /// second request through us.
    public static func absoluteFormHead(
        method: String, target: String, version: String = "HTTP/1.1", host: String,
        headers: [(name: String, value: String)], credentials: ProxyCredentials?
    ) throws(RelayError) -> [UInt8] {
        guard !method.isEmpty, method.utf8.allSatisfy(isTokenByte) else { throw .protocolViolation(.requestLine) }
        guard version.utf8.elementsEqual("HTTP/1.1".utf8) || version.utf8.elementsEqual("HTTP/1.0".utf8) else {
            throw .protocolViolation(.requestLine)
        }
        guard !host.isEmpty, host.utf8.allSatisfy(isAuthorityByte) else { throw .protocolViolation(.requestTarget) }
        guard !target.isEmpty, target.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7f }) else {
            throw .protocolViolation(.requestTarget)
        }
        if let credentials, !credentials.fitsBasic { throw .unrepresentable(.headerValue) }

        let absolute: String
        if target.utf8.starts(with: "http://".utf8) {
            absolute = target
        } else if target == "*" {
            absolute = "http://\(host)"
        } else if target.utf8.first == UInt8(ascii: "/") {
            absolute = "http://\(host)\(target)"
        } else {
            throw .protocolViolation(.requestTarget)
        }

        var head = "\(method) \(absolute) \(version)\r\n"
        for (name, value) in headers {
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else { throw .protocolViolation(.headerSyntax) }
            guard value.utf8.allSatisfy(isFieldValueByte) else { throw .unrepresentable(.headerValue) }
            let lower = name.lowercased()
            if lower == "proxy-authorization" || lower == "proxy-connection" { continue }
            head += "\(name): \(value)\r\n"
        }
        if let credentials { head += "Proxy-Authorization: \(credentials.basicAuthorization)\r\n" }
        head += "\r\n"
        return Array(head.utf8)
    }
}

/// What may appear in a host[:port] authority: a name, an address, brackets and colons for IPv6.
func isAuthorityByte(_ b: UInt8) -> Bool {
    switch b {
    case UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "A") ... UInt8(ascii: "Z"), UInt8(ascii: "0") ... UInt8(ascii: "9"),
         UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"):
        return true
    default:
        return false
    }
}
