internal import Synchronization

/// A regex from the profile, checked once at load. Swift's `Regex` is neither
/// Equatable nor Sendable; the profile needs both (reloads compare profiles, the
/// engine hands them between threads), so equality is the source text's.
///
/// A compiled `Regex` holds about 17 KB and takes about 50 µs to make, and an
/// ad-blocking profile has thousands of patterns that the byte matcher
/// answers alone, groups and all. For those no `Regex` is made at load (the
/// byte matcher's parser accepts only what Regex accepts, which a test checks
/// on generated patterns); one is made on first use if a text needs it (one
/// that is not printable ASCII). The others compile theirs at load, and a
/// pattern that does not compile is reported there.
public final class CompiledRegex: @unchecked Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The pattern as written in the profile, after unquoting.
    public let source: String
    /// The compiled `Regex`, once made; guarded, since profiles are shared between threads.
    private let compiled: Mutex<RegexBox?>
    /// How many capture groups the pattern declares ($1...$N may refer to them).
    public let captureCount: Int
    /// ASCII every match must start with, for a pattern anchored by "^"
    /// ("^http://api\.test/v1" gives "http://api.test/v1"); empty when unknown.
    /// Most patterns of a profile do not match most requests, and comparing
    /// bytes says so far sooner than running the regex.
    let requiredPrefix: [UInt8]
    /// True for the patterns that match at the start of any text (".*", a
    /// [Statistics] line's "count everything"), so `matches` need not run them.
    let matchesEverything: Bool
    /// True when the pattern is "^" and `requiredPrefix` and nothing else
    /// ("^http://api\.test/", the usual header-rewrite line): beginning with
    /// the prefix is then the whole question, as long as the text goes on
    /// in ASCII (a combining mark would join the prefix's last Character).
    let isPrefixOnly: Bool
    /// The pattern over bytes, when it is in `ByteMatcher`'s subset.
    let byteMatcher: ByteMatcher?
    /// Bytes every match contains (lowercased, three or more), for the
    /// rule engine's index of URL-REGEX lines; nil when unknown.
    let requiredLiteral: [UInt8]?

    /// Compiles `source`; the thrown error's description says what is wrong.
    public init(_ source: String) throws {
        self.source = source
        captureCount = CompiledRegex.countCaptures(source)
        let literal = CompiledRegex.literalScan(source)
        requiredPrefix = literal.prefix
        isPrefixOnly = literal.whole && !literal.prefix.isEmpty
        matchesEverything = CompiledRegex.everywhere.contains(source)
        let matcher = ByteMatcher(source)
        byteMatcher = matcher
        requiredLiteral = matcher?.requiredLiteral
        let groups = captureCount
        let answeredByBytes = matcher.map { $0.capturesAreExact || groups == 0 } ?? false
        compiled = Mutex(answeredByBytes ? nil : RegexBox(try Regex(source)))
    }

    /// True when neither index can pass this pattern over for a URL: it has
    /// no required run, and its required prefix is empty or part of
    /// "http://" or "https://", which every URL begins with. As a URL-REGEX,
    /// URL Rewrite, Map Local or Header Rewrite line it runs on every
    /// request; `sluice check` names such lines.
    public var runsOnEveryURL: Bool {
        guard requiredLiteral == nil else { return false }
        return requiredPrefix.isEmpty || "https://".utf8.starts(with: requiredPrefix) || "http://".utf8.starts(with: requiredPrefix)
    }

    /// The pattern as Swift's `Regex`, made on first use when load did not.
    public var regex: Regex<AnyRegexOutput> {
        compiled.withLock { box in
            if let box { return box }
            // Should Regex refuse what the byte matcher took, the pattern
            // matches no text that is not ASCII, rather than stopping the tunnel.
            let made = RegexBox((try? Regex(source)) ?? RegexBox.neverMatches)
            box = made
            return made
        }.regex
    }

    /// Patterns that match the empty string at the start of any text: "." never
    /// has to match, so newlines and other text cannot make them fail. Kept to
    /// exact spellings; anything cleverer goes to the regex.
    static let everywhere: Set<String> = ["", "^", ".*", "^.*", ".*?", "^.*?", "(.*)", "^(.*)", "(.*?)", "^(.*?)"]

    public static func == (a: CompiledRegex, b: CompiledRegex) -> Bool { a.source == b.source }
    public func hash(into hasher: inout Hasher) { hasher.combine(source) }
    public var description: String { source }

    /// The first match anywhere in `text` (profile regexes are searches, as in Surge:
    /// anchor with ^ and $ to match a whole URL).
    public func firstMatch(in text: String) -> PatternMatch? {
        if !requiredPrefix.isEmpty, Self.cannotStart(text, with: requiredPrefix) { return nil }
        switch byteSearch(text, from: 0) {
        case .noMatch?:
            return nil
        case let .match(slots)? where bytesFindGroups:
            return PatternMatch(slots: slots, in: text)
        case .match?, .notForBytes?, nil:
            // Not for bytes, or the groups need Regex (the match exists).
            return (try? regex.firstMatch(in: text)).map(PatternMatch.init)
        }
    }

    /// Every match, left to right, as Regex's `matches(of:)` finds them: the
    /// next search starts where a match ended, or one further after an empty
    /// one, and "^" means the start of the text.
    public func allMatches(in text: String) -> [PatternMatch] {
        if bytesFindGroups {
            var found: [PatternMatch] = []
            var start = 0
            let count = text.utf8.count
            search: while start <= count {
                switch byteSearch(text, from: start) {
                case let .match(slots)?:
                    found.append(PatternMatch(slots: slots, in: text))
                    start = slots[0] == slots[1] ? slots[1] + 1 : slots[1]
                case .noMatch?:
                    break search
                case .notForBytes?, nil:
                    return text.matches(of: regex).map(PatternMatch.init)
                }
            }
            return found
        }
        // The groups need Regex; whether there is any match, bytes can say.
        if case .noMatch? = byteSearch(text, from: 0) { return [] }
        return text.matches(of: regex).map(PatternMatch.init)
    }

    /// True when a match from the byte matcher can be used whole, groups and all.
    private var bytesFindGroups: Bool {
        guard let byteMatcher else { return false }
        return byteMatcher.capturesAreExact || captureCount == 0
    }

    /// The byte matcher's search from UTF-8 offset `start`; nil without one.
    private func byteSearch(_ text: String, from start: Int) -> ByteMatcher.Search? {
        guard let byteMatcher else { return nil }
        return text.utf8.withContiguousStorageIfAvailable { byteMatcher.firstMatch(bytes: $0, from: start) }
            ?? Array(text.utf8).withUnsafeBufferPointer { byteMatcher.firstMatch(bytes: $0, from: start) }
    }

    /// True only when `text` surely does not begin with `prefix`: an ASCII
    /// byte that differs. Regex compares Characters under canonical
    /// equivalence (U+212A KELVIN SIGN matches "K"), so a text that is not
    /// ASCII where it differs is left to the regex.
    static func cannotStart(_ text: String, with prefix: [UInt8]) -> Bool {
        var bytes = text.utf8.makeIterator()
        for expected in prefix {
            guard let byte = bytes.next() else { return true }
            if byte != expected { return byte < 0x80 }
        }
        return false
    }

    /// The literal text right after a leading "^", up to the first
    /// metacharacter. Nothing for a pattern with "|" (another branch need not
    /// share it) or "(?" (flags such as case-insensitivity, lookarounds), and a
    /// literal followed by "*", "?" or "{" is not required, so it ends before it.
    static func literalPrefix(_ pattern: String) -> [UInt8] { literalScan(pattern).prefix }

    /// The literal prefix, and whether it is the whole pattern after "^".
    static func literalScan(_ pattern: String) -> (prefix: [UInt8], whole: Bool) {
        let p = Array(pattern.utf8)
        guard p.first == UInt8(ascii: "^"), !p.contains(UInt8(ascii: "|")) else { return ([], false) }
        for i in p.indices.dropLast() where p[i] == UInt8(ascii: "(") && p[i + 1] == UInt8(ascii: "?") { return ([], false) }
        let meta = Set(".[](){}*+?|^$\\".utf8)
        let escapable = Set(".[](){}*+?|^$\\/-:=&%,@~_#!".utf8)
        var prefix: [UInt8] = []
        var i = 1
        while i < p.count {
            let literal: UInt8, width: Int
            if p[i] == UInt8(ascii: "\\") {
                guard i + 1 < p.count, escapable.contains(p[i + 1]) else { break }
                literal = p[i + 1]; width = 2
            } else if p[i] < 0x80, p[i] >= 0x20, !meta.contains(p[i]) {
                literal = p[i]; width = 1
            } else {
                break
            }
            let next = i + width < p.count ? p[i + width] : nil
            if let next, next == UInt8(ascii: "*") || next == UInt8(ascii: "?") || next == UInt8(ascii: "{") { break }
            prefix.append(literal)
            if next == UInt8(ascii: "+") { break }
            i += width
        }
        return (prefix, i == p.count)
    }

    /// Whether the pattern matches anywhere in `text`: the cheapest sure
    /// answer first (bytes of a literal, then the byte matcher), Regex last.
    public func matches(_ text: String) -> Bool {
        if matchesEverything { return true }
        if isPrefixOnly, Self.surelyStarts(text, with: requiredPrefix) { return true }
        if !requiredPrefix.isEmpty, Self.cannotStart(text, with: requiredPrefix) { return false }
        if let answer = byteMatcher?.matches(text) { return answer }
        return (try? regex.firstMatch(in: text)) != nil
    }

    /// True only when `text` begins with `prefix` and the byte after it, if
    /// any, is ASCII, so that no Character straddles the prefix's end.
    static func surelyStarts(_ text: String, with prefix: [UInt8]) -> Bool {
        var bytes = text.utf8.makeIterator()
        for expected in prefix {
            guard bytes.next() == expected else { return false }
        }
        guard let after = bytes.next() else { return true }
        return after < 0x80
    }

    /// Counts capturing groups in the pattern text: an unescaped "(" outside a
    /// bracket expression that is not "(?" — except the named forms "(?<name>",
    /// "(?P<name>" and "(?'name'", which capture.
    static func countCaptures(_ pattern: String) -> Int {
        let chars = Array(pattern.unicodeScalars)
        var count = 0, i = 0, inClass = false
        while i < chars.count {
            let c = chars[i]
            if c == "\\" { i += 2; continue }
            if inClass {
                if c == "]" { inClass = false }
            } else if c == "[" {
                inClass = true
                // A "]" right after "[" or "[^" is a literal member, not the end.
                if i + 1 < chars.count, chars[i + 1] == "^" { i += 1 }
                if i + 1 < chars.count, chars[i + 1] == "]" { i += 1 }
            } else if c == "(" {
                if i + 1 < chars.count, chars[i + 1] == "?" {
                    if i + 2 < chars.count {
                        let n = chars[i + 2]
                        if n == "'" || n == "P" && i + 3 < chars.count && chars[i + 3] == "<" { count += 1 }
                        if n == "<", i + 3 < chars.count, chars[i + 3] != "=", chars[i + 3] != "!" { count += 1 }
                    }
                } else if i + 1 < chars.count, chars[i + 1] == "*" {
                    // (*VERB) is a control verb, not a group.
                } else {
                    count += 1
                }
            }
            i += 1
        }
        return count
    }
}

/// A `Regex` that may cross threads: it is made once and only read after.
final class RegexBox: @unchecked Sendable {
    let regex: Regex<AnyRegexOutput>

    init(_ regex: Regex<AnyRegexOutput>) { self.regex = regex }

    /// An empty negative lookahead: fails everywhere.
    nonisolated(unsafe) static let neverMatches = try! Regex("(?!)")
}
