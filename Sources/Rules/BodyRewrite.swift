/// One line of [Body Rewrite] (Surge's): `DIRECTION URLREGEX REGEX REPLACEMENT
/// [REGEX REPLACEMENT ...]`. Each pair replaces every match in the body, in
/// order; `^` and `$` match at every line's start and end, as in Surge.
public struct BodyRewrite: Equatable, Sendable, CustomStringConvertible {
    public var direction: HeaderRewriteDirection
    /// Searched in the absolute request URL (for responses: the URL of the request they answer).
    public var regex: CompiledRegex
    public var replacements: [BodyReplacement]
    public var line: Int

    public init(direction: HeaderRewriteDirection, regex: CompiledRegex, replacements: [BodyReplacement], line: Int) {
        self.direction = direction; self.regex = regex; self.replacements = replacements; self.line = line
    }

    public var description: String {
        ([direction.rawValue, regex.source] + replacements.flatMap { [$0.source.debugDescription, $0.replacement.debugDescription] })
            .joined(separator: " ")
    }
}

/// A REGEX REPLACEMENT pair of a [Body Rewrite] line.
public struct BodyReplacement: Equatable, Sendable {
    /// The regex as written.
    public var source: String
    /// `source` compiled with `(?m)`: anchors at line ends.
    public var pattern: CompiledRegex
    /// `$1`... name the regex's groups.
    public var replacement: String

    /// Compiles `source`; the thrown error's description says what is wrong.
    public init(source: String, replacement: String) throws {
        self.source = source
        pattern = try CompiledRegex("(?m)" + source)
        self.replacement = replacement
    }
}
