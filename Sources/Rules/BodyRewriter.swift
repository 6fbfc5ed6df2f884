/// [Body Rewrite], compiled once. Every line whose URL regex matches applies,
/// in profile order, each pair after the one before (Surge's order).
///
/// Bodies are text: a body that is not UTF-8 is left alone (replacing
/// inside binary data would corrupt it), and so is one larger than
/// `bodyLimit`, which the engine would otherwise have to hold whole.
public struct BodyRewriter: Sendable {
    private let rewrites: [BodyRewrite]
    private let templates: [[URLTemplate]]
    /// Per pair, its byte search when its regex is plain text.
    private let literals: [[LiteralReplacement?]]
    private let index: LiteralPrefixIndex
    private let hasRequestLines: Bool
    private let hasResponseLines: Bool

    /// The largest body held for rewriting (Sluice holds it whole to
    /// rewrite it, and sends it on with a new Content-Length); a larger one
    /// passes unchanged, as it came. [General]'s `body-rewrite-limit`, else
    /// `defaultBodyLimit`.
    public let bodyLimit: Int
    public static let defaultBodyLimit = 4 << 20

    /// `bodyLimit` as people write it: "4 MiB", "512 KiB", or bytes.
    public var bodyLimitText: String {
        if bodyLimit % (1 << 20) == 0 { return "\(bodyLimit >> 20) MiB" }
        if bodyLimit % (1 << 10) == 0 { return "\(bodyLimit >> 10) KiB" }
        return "\(bodyLimit) bytes"
    }

    public init(_ profile: Profile) { self.init(rewrites: profile.bodyRewrites, bodyLimit: profile.general.bodyRewriteLimit) }

    public init(rewrites: [BodyRewrite], bodyLimit: Int = defaultBodyLimit) {
        self.rewrites = rewrites
        self.bodyLimit = bodyLimit
        templates = rewrites.map { $0.replacements.map { URLTemplate($0.replacement) } }
        literals = rewrites.map { $0.replacements.map { LiteralReplacement(source: $0.source, template: URLTemplate($0.replacement)) } }
        index = LiteralPrefixIndex(prefixes: rewrites.map(\.regex.requiredPrefix), literals: rewrites.map(\.regex.requiredLiteral))
        hasRequestLines = rewrites.contains { $0.direction == .request }
        hasResponseLines = rewrites.contains { $0.direction == .response }
    }

    /// The entries of `direction` whose URL regex matches `url`, in profile
    /// order; empty, without allocating, when the profile has none.
    public func matching(_ direction: HeaderRewriteDirection, url: String) -> [Int] {
        guard direction == .request ? hasRequestLines : hasResponseLines else { return [] }
        return index.candidates(for: url).filter { rewrites[$0].direction == direction && rewrites[$0].regex.matches(url) }
    }

    /// The profile lines of the entries `matching` found.
    func lines(_ matched: [Int]) -> [Int] { matched.map { rewrites[$0].line } }

    /// The lines of `direction` for `url`, with this rewriter, to apply when
    /// the body has come; nil when none matches. A body held across a
    /// reload is rewritten by the profile that matched it, whose indices
    /// these are.
    public func select(_ direction: HeaderRewriteDirection, url: String) -> BodyRewriteSelection? {
        let matched = matching(direction, url: url)
        return matched.isEmpty ? nil : BodyRewriteSelection(rewriter: self, matched: matched)
    }

    /// `body` with the entries `matching` found applied; nil when it is not
    /// UTF-8 (left alone) or nothing changed.
    public func apply(_ matched: [Int], to body: [UInt8]) -> [UInt8]? {
        guard !matched.isEmpty, String(validating: body, as: UTF8.self) != nil else { return nil }
        var rewritten = body
        for i in matched {
            for (pair, (template, literal)) in zip(rewrites[i].replacements, zip(templates[i], literals[i])) {
                if let literal, let replaced = literal.replaceAll(in: rewritten) {
                    rewritten = replaced
                    continue
                }
                // (Still UTF-8: each replacement is a String's.)
                let text = String(decoding: rewritten, as: UTF8.self)
                rewritten = Array(HeaderRewriter.replaceAll(in: text, pattern: pair.pattern, with: template).utf8)
            }
        }
        // Bytes, not String's ==, which calls canonically equivalent texts equal.
        return rewritten == body ? nil : rewritten
    }
}

/// The [Body Rewrite] lines that matched one message, and the rewriter they belong to.
public struct BodyRewriteSelection: Sendable {
    public let rewriter: BodyRewriter
    public let matched: [Int]

    /// `BodyRewriter.apply` with these lines.
    public func apply(to body: [UInt8]) -> [UInt8]? { rewriter.apply(matched, to: body) }

    /// Their line numbers in the profile.
    public var lines: [Int] { rewriter.lines(matched) }
}
