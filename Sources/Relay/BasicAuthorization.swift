internal import Crypto
internal import HTTP

extension ProxyCredentials {
    /// RFC 7617 forbids a colon in the user-id (it separates the two) and
    /// control characters anywhere.
    public var fitsBasic: Bool {
        !username.contains(":") && username.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7f }
            && password.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7f }
    }

    /// `Basic <base64(user:pass)>`, the value of Proxy-Authorization.
    public var basicAuthorization: String {
        "Basic " + Base64.encode(Array(username.utf8) + [UInt8(ascii: ":")] + Array(password.utf8))
    }

    /// Checks a Proxy-Authorization value against these credentials. The scheme
    /// name is case-insensitive (RFC 9110 §11.1); the comparison of the
    /// secret takes time that depends only on our credentials.
    func acceptsBasic(_ value: Substring) -> Bool {
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let decoded = Base64.decode(String(parts[1].trimmingWhitespace)) else { return false }
        let expected = Array(username.utf8) + [UInt8(ascii: ":")] + Array(password.utf8)
        return decoded.withUnsafeBytes { constantTimeEquals(expected, $0) }
    }
}
