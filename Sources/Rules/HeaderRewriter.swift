/// [Header Rewrite], compiled once. Unlike URL Rewrite, every matching line
/// applies, in profile order, so a profile can add one header and delete
/// another for the same URL.
public struct HeaderRewriter: Sendable {
    // The lines' parts in arrays of their own, one index per line: every
    // request asks for the directions and regexes of its candidates, and
    // reading those out of one list of whole lines copied each line (its
    // operation's strings, its template) per question.
    private let directions: [HeaderRewriteDirection]
    private let regexes: [CompiledRegex]
    private let operations: [HeaderOperation]
    private let templates: [URLTemplate?]
    private let lines: [Int]
    private let index: LiteralPrefixIndex
    private let hasRequestLines: Bool
    private let hasResponseLines: Bool

    public init(_ profile: Profile) { self.init(rewrites: profile.headerRewrites) }

    public init(rewrites: [HeaderRewrite]) {
        directions = rewrites.map(\.direction)
        regexes = rewrites.map(\.regex)
        operations = rewrites.map(\.operation)
        templates = rewrites.map { rewrite in
            if case let .replaceRegex(_, _, replacement) = rewrite.operation { return URLTemplate(replacement) }
            return nil
        }
        lines = rewrites.map(\.line)
        index = LiteralPrefixIndex(prefixes: rewrites.map(\.regex.requiredPrefix), literals: rewrites.map(\.regex.requiredLiteral))
        hasRequestLines = rewrites.contains { $0.direction == .request }
        hasResponseLines = rewrites.contains { $0.direction == .response }
    }

    /// Applies the `direction` lines whose regex matches `url` (for responses,
    /// the URL of the request they answer) to `headers`. Returns the lines of
    /// the entries that matched, whether or not they changed anything.
    @discardableResult
    public func apply(_ direction: HeaderRewriteDirection, url: String, to headers: inout [HeaderField]) -> [Int] {
        let matched = matching(direction, url: url)
        apply(matched, to: &headers)
        return matched.map { lines[$0] }
    }

    /// The entries of `direction` whose regex matches `url`, in profile order:
    /// empty, and without allocating, when none does; the caller can then
    /// leave the headers as they are.
    public func matching(_ direction: HeaderRewriteDirection, url: String) -> [Int] {
        guard direction == .request ? hasRequestLines : hasResponseLines else { return [] }
        // Filtered in place: the candidates' array is this call's own.
        var matched = index.candidates(for: url)
        matched.removeAll { directions[$0] != direction || !regexes[$0].matches(url) }
        return matched
    }

    /// Applies the entries `matching` found, in order.
    public func apply<Headers: RewritableHeaders>(_ matched: [Int], to headers: inout Headers) {
        for i in matched { Self.apply(operations[i], template: templates[i], to: &headers) }
    }

    static func apply<Headers: RewritableHeaders>(_ operation: HeaderOperation, template: URLTemplate?, to headers: inout Headers) {
        switch operation {
        case let .add(name, value):
            headers.appendField(name: name, value: value)
        case let .replace(name, value):
            headers.updateValues(of: name) { _ in value }
        case let .delete(name):
            headers.removeFields(named: name)
        case let .replaceRegex(name, pattern, replacement):
            let template = template ?? URLTemplate(replacement)
            headers.updateValues(of: name) { replaceAll(in: $0, pattern: pattern, with: template) }
        }
    }

    /// Every non-overlapping match replaced, left to right.
    static func replaceAll(in value: String, pattern: CompiledRegex, with template: URLTemplate) -> String {
        var out = ""
        var rest = value.startIndex
        for match in pattern.allMatches(in: value) {
            out += value[rest ..< match.range.lowerBound]
            out += template.expand(match)
            rest = match.range.upperBound
        }
        out += value[rest...]
        return out
    }
}
