/// What [URL Rewrite] does to one request.
public enum URLRewriteAction: Sendable, Equatable, CustomStringConvertible {
    case none
    /// Forward to `url` instead: new host (and so upstream), path and Host
    /// header; method, other headers and body untouched.
    case header(url: String, line: Int)
    /// Answer at once with `status` (302 or 307) and `Location: location`.
    case redirect(status: Int, location: String, line: Int)
    /// Answer at once with a canned response.
    case reject(RejectResponse, line: Int)

    public var line: Int? {
        switch self {
        case .none: return nil
        case let .header(_, line), let .redirect(_, _, line), let .reject(_, line): return line
        }
    }

    public var description: String {
        switch self {
        case .none: return "no rewrite"
        case let .header(url, line): return "line \(line): rewrite to \(url) (header mode)"
        case let .redirect(status, location, line): return "line \(line): \(status) to \(location)"
        case let .reject(kind, line): return "line \(line): \(kind) (\(kind.status))"
        }
    }
}

/// [URL Rewrite], compiled once; first match wins. The matched part of the URL
/// is replaced by the expanded replacement and the rest kept, as a regex
/// replace does, so `^http://a\.test http://b.test 302` keeps the path; with
/// `(.*)` to the end the replacement is the whole new URL.
public struct URLRewriter: Sendable {
    private let entries: [(rewrite: URLRewrite, template: URLTemplate)]
    private let index: LiteralPrefixIndex

    public init(_ profile: Profile) { self.init(rewrites: profile.urlRewrites) }

    public init(rewrites: [URLRewrite]) {
        entries = rewrites.map { ($0, URLTemplate($0.replacement)) }
        index = LiteralPrefixIndex(prefixes: rewrites.map(\.regex.requiredPrefix), literals: rewrites.map(\.regex.requiredLiteral))
    }

    public func rewrite(url: String) -> URLRewriteAction {
        for i in index.candidates(for: url) {
            let (rewrite, template) = entries[i]
            guard let match = rewrite.regex.firstMatch(in: url) else { continue }
            if let kind = RejectResponse(rewrite.mode) { return .reject(kind, line: rewrite.line) }
            let newURL = String(url[..<match.range.lowerBound]) + template.expand(match) + String(url[match.range.upperBound...])
            return rewrite.mode == .header ? .header(url: newURL, line: rewrite.line)
                : .redirect(status: rewrite.mode == .found ? 302 : 307, location: newURL, line: rewrite.line)
        }
        return .none
    }
}
