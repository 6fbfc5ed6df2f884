/// `HTTP/major.minor`. Only 1.0 and 1.1 reach a parsed head.
public struct HTTPVersion: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var major: UInt8
    public var minor: UInt8

    public init(major: UInt8, minor: UInt8) {
        self.major = major
        self.minor = minor
    }

    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    public var description: String { "HTTP/\(major).\(minor)" }

    func serialize(into out: inout [UInt8]) {
        out.append(contentsOf: [UInt8(ascii: "H"), UInt8(ascii: "T"), UInt8(ascii: "T"), UInt8(ascii: "P"),
                                UInt8(ascii: "/"), UInt8(ascii: "0") + major % 10, UInt8(ascii: "."),
                                UInt8(ascii: "0") + minor % 10])
    }
}

/// A request method token (RFC 9110 §9). Methods are case-sensitive: `get`
/// is not `GET`.
public struct HTTPMethod: RawRepresentable, Sendable, Equatable, Hashable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }

    public var description: String { rawValue }

    public static let get: HTTPMethod = "GET"
    public static let head: HTTPMethod = "HEAD"
    public static let post: HTTPMethod = "POST"
    public static let put: HTTPMethod = "PUT"
    public static let delete: HTTPMethod = "DELETE"
    public static let connect: HTTPMethod = "CONNECT"
    public static let options: HTTPMethod = "OPTIONS"
    public static let trace: HTTPMethod = "TRACE"
    public static let patch: HTTPMethod = "PATCH"
}
