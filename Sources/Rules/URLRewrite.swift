/// One line of [URL Rewrite]: `REGEX REPLACEMENT MODE`.
public struct URLRewrite: Equatable, Sendable, CustomStringConvertible {
    /// Searched in the absolute request URL.
    public var regex: CompiledRegex
    /// The new URL; `$1`...`$9` are the regex's capture groups. Unused by the reject modes.
    public var replacement: String
    public var mode: URLRewriteMode
    public var line: Int

    public init(regex: CompiledRegex, replacement: String, mode: URLRewriteMode, line: Int) {
        self.regex = regex; self.replacement = replacement; self.mode = mode; self.line = line
    }

    public var description: String { "\(regex.source) \(replacement) \(mode.rawValue)" }
}

public enum URLRewriteMode: String, Equatable, Sendable, CaseIterable {
    /// Forward to the new URL transparently: new host, path and Host header,
    /// same method, headers and body; the new host picks the upstream.
    case header
    /// Answer 302 Found with Location: the client re-requests, and most turn a POST into a GET without its body.
    case found = "302"
    /// Answer 307 Temporary Redirect: the client repeats the same method and body.
    case temporaryRedirect = "307"
    /// Answer 404 with an empty body.
    case reject
    /// Answer 200 with an empty body.
    case reject200 = "reject-200"
    /// Answer 200 with a 1x1 transparent GIF.
    case rejectImage = "reject-img"
    /// Answer 200 with `{}`.
    case rejectDictionary = "reject-dict"
    /// Answer 200 with `[]`.
    case rejectArray = "reject-array"

    /// True for the modes that answer without a new URL.
    public var isReject: Bool {
        switch self {
        case .header, .found, .temporaryRedirect: return false
        case .reject, .reject200, .rejectImage, .rejectDictionary, .rejectArray: return true
        }
    }
}
