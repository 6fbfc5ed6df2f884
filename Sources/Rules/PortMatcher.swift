/// The value of DEST-PORT / SRC-PORT: one port ("5432"), an inclusive range
/// ("8000-8100"), or a comparison (">=50000", ">1023", "<=1023", "<1024").
/// Every form reduces to one inclusive range, so matching is two compares.
public struct PortMatcher: Sendable, Hashable, CustomStringConvertible {
    public var lower: UInt16
    public var upper: UInt16

    public init(lower: UInt16, upper: UInt16) {
        self.lower = lower
        self.upper = upper
    }

    /// Nil for anything else, including an empty range ("<0", ">65535", "9-3")
    /// and blanks inside the value.
    public init?(_ text: some StringProtocol) {
        let s = Substring(text)
        func port(_ t: Substring) -> UInt16? {
            guard !t.isEmpty, t.count <= 5, t.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            return UInt16(t)
        }
        if s.hasPrefix(">=") {
            guard let p = port(s.dropFirst(2)) else { return nil }
            self.init(lower: p, upper: .max)
        } else if s.hasPrefix("<=") {
            guard let p = port(s.dropFirst(2)) else { return nil }
            self.init(lower: 0, upper: p)
        } else if s.hasPrefix(">") {
            guard let p = port(s.dropFirst()), p < .max else { return nil }
            self.init(lower: p + 1, upper: .max)
        } else if s.hasPrefix("<") {
            guard let p = port(s.dropFirst()), p > 0 else { return nil }
            self.init(lower: 0, upper: p - 1)
        } else if let dash = s.firstIndex(of: "-") {
            guard let a = port(s[..<dash]), let b = port(s[s.index(after: dash)...]), a <= b else { return nil }
            self.init(lower: a, upper: b)
        } else {
            guard let p = port(s) else { return nil }
            self.init(lower: p, upper: p)
        }
    }

    @inline(__always)
    public func matches(_ port: UInt16) -> Bool { lower <= port && port <= upper }

    public var description: String {
        if lower == upper { return "\(lower)" }
        if upper == .max { return ">=\(lower)" }
        if lower == 0 { return "<=\(upper)" }
        return "\(lower)-\(upper)"
    }
}
