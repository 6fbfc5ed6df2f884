/// [Header Rewrite], compiled once. Unlike URL Rewrite, every matching line
/// applies, in profile order, so a profile can add one header and delete
/// another for the same URL.
public struct HeaderRewriter: Sendable {
    private let entries: [(rewrite: HeaderRewrite, template: URLTemplate?)]
    private let index: LiteralPrefixIndex
    private let hasRequestLines: Bool
    private let hasResponseLines: Bool

    public init(_ profile: Profile) { self.init(rewrites: profile.headerRewrites) }

    public init(rewrites: [HeaderRewrite]) {
        entries = rewrites.map { rewrite in
            if case let .replaceRegex(_, _, replacement) = rewrite.operation { return (rewrite, URLTemplate(replacement)) }
            return (rewrite, nil)
        }
        index = LiteralPrefixIndex(prefixes: rewrites.map(\.regex.requiredPrefix), literals: rewrites.map(\.regex.requiredLiteral))
        hasRequestLines = rewrites.contains { $0.direction == .request }
        hasResponseLines = rewrites.contains { $0.direction == .response }
    }

    /// Applies the `direction` lines whose regex matches `url` (for responses,
    /// the URL of the request they answer) to `headers`. Returns the lines of
    /// the entries that matched, whether or not they changed anything.
    @discardableResult
    public func apply(_ direction: HeaderRewriteDirection, url: String, to headers: inout [HeaderField]) -> [Int] {
        apply(matching(direction, url: url), to: &headers)
    }

    /// The entries of `direction` whose regex matches `url`, in profile order:
    /// empty, and without allocating, when none does; the caller can then
    /// leave the headers as they are.
    public func matching(_ direction: HeaderRewriteDirection, url: String) -> [Int] {
        guard direction == .request ? hasRequestLines : hasResponseLines else { return [] }
        return index.candidates(for: url).filter { entries[$0].rewrite.direction == direction && entries[$0].rewrite.regex.matches(url) }
    }

    /// Applies the entries `matching` found. Returns their lines.
    @discardableResult
    public func apply<Headers: RewritableHeaders>(_ matched: [Int], to headers: inout Headers) -> [Int] {
        matched.map { i in
            Self.apply(entries[i].rewrite.operation, template: entries[i].template, to: &headers)
            return entries[i].rewrite.line
        }
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
