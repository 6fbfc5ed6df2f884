import Wire

/// One item of [MITM] `hostname`: the names (or address literals) and the
/// port whose HTTPS Sluice intercepts or, written with a leading `-`, never
/// intercepts. `*` is any run of characters, dots included, and `?` one
/// character, as in Surge.
public struct MITMHostPattern: Sendable, Equatable, CustomStringConvertible {
    /// Lowercased, without a trailing dot or brackets; an address without
    /// wildcards in its canonical text, since that is what it is matched against.
    public let host: String
    /// The one port it applies to (443 unless written); nil for every port (`:0`).
    public let port: UInt16?
    /// A `-` item: a flow it matches is not intercepted, whatever else matches.
    public let excludes: Bool

    /// The pattern's bytes, kept so a match walks bytes and allocates nothing for the pattern.
    private let bytes: [UInt8]
    private let hasWildcard: Bool

    /// The parser checks the text first; this takes it as given.
    public init(host: String, port: UInt16? = 443, excludes: Bool = false) {
        bytes = Self.subject(host)
        self.host = String(decoding: bytes, as: UTF8.self)
        self.port = port
        self.excludes = excludes
        hasWildcard = bytes.contains(UInt8(ascii: "*")) || bytes.contains(UInt8(ascii: "?"))
    }

    /// Whether it matches `host` (a name, in any case, or an address's text) on `port`.
    public func matches(host: String, port: UInt16) -> Bool {
        matches(Self.subject(host), port: port)
    }

    /// `subject` is what `subject(_:)` made of the host.
    func matches(_ subject: [UInt8], port: UInt16) -> Bool {
        if let own = self.port, own != port { return false }
        return hasWildcard ? Self.glob(bytes, subject) : bytes == subject
    }

    /// A host as patterns hold theirs: lowercased, no trailing dot or
    /// brackets, an address in canonical text, since callers may hand any
    /// spelling (a pattern with a wildcard is no address: it is kept as text).
    static func subject(_ host: String) -> [UInt8] {
        var bytes = Array(host.utf8)
        if bytes.first == UInt8(ascii: "["), bytes.last == UInt8(ascii: "]"), bytes.count >= 2 { bytes.removeFirst(); bytes.removeLast() }
        if bytes.last == UInt8(ascii: ".") { bytes.removeLast() }
        // Only text that may be an address is parsed as one: names are the common case.
        if let first = bytes.first, first >= 0x30 && first <= 0x39 || bytes.contains(UInt8(ascii: ":")),
           let address = IPAddress(String(decoding: bytes, as: UTF8.self)) {
            return Array(address.description.utf8)
        }
        for i in bytes.indices { bytes[i] = DomainSuffixIndex<Int>.lower(bytes[i]) }
        return bytes
    }

    /// Wildcard matching with one backtrack point (as `GlobPattern`, over
    /// bytes: names are ASCII): never exponential, whatever the pattern.
    private static func glob(_ p: [UInt8], _ t: [UInt8]) -> Bool {
        let star = UInt8(ascii: "*"), one = UInt8(ascii: "?")
        var i = 0, j = 0, lastStar = -1, resume = 0
        while j < t.count {
            if i < p.count, p[i] != star, p[i] == one || p[i] == t[j] {
                i += 1; j += 1
            } else if i < p.count, p[i] == star {
                lastStar = i; resume = j; i += 1
            } else if lastStar >= 0 {
                i = lastStar + 1; resume += 1; j = resume
            } else {
                return false
            }
        }
        while i < p.count, p[i] == star { i += 1 }
        return i == p.count
    }

    /// As it would be written: `-` for an exclusion, brackets around IPv6, a port other than 443.
    public var description: String {
        let name = host.contains(":") ? "[\(host)]" : host
        let suffix = port.map { $0 == 443 ? "" : ":\($0)" } ?? ":0"
        return (excludes ? "-" : "") + name + suffix
    }
}
