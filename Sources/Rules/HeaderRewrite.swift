/// One line of [Header Rewrite]: `DIRECTION REGEX OP NAME [VALUE [REPLACEMENT]]`.
public struct HeaderRewrite: Equatable, Sendable, CustomStringConvertible {
    public var direction: HeaderRewriteDirection
    /// Searched in the absolute request URL (for responses: the URL of the request they answer).
    public var regex: CompiledRegex
    public var operation: HeaderOperation
    public var line: Int

    public init(direction: HeaderRewriteDirection, regex: CompiledRegex, operation: HeaderOperation, line: Int) {
        self.direction = direction; self.regex = regex; self.operation = operation; self.line = line
    }

    public var description: String { "\(direction.rawValue) \(regex.source) \(operation)" }
}

public enum HeaderRewriteDirection: String, Equatable, Sendable, CaseIterable {
    case request = "http-request"
    case response = "http-response"
}

/// Header names compare case-insensitively (RFC 9110 §5.1).
public enum HeaderOperation: Equatable, Sendable, CustomStringConvertible {
    /// header-add: appends a field, even when one of that name exists.
    case add(name: String, value: String)
    /// header-replace: sets the value of every field of that name; absent, nothing happens (as Surge).
    case replace(name: String, value: String)
    /// header-del: removes every field of that name.
    case delete(name: String)
    /// header-replace-regex: in every field of that name, replaces each match of `pattern` by `replacement` ($1... allowed).
    case replaceRegex(name: String, pattern: CompiledRegex, replacement: String)

    public var name: String {
        switch self {
        case let .add(name, _), let .replace(name, _), let .delete(name), let .replaceRegex(name, _, _): return name
        }
    }

    /// The operation as written in the profile.
    public var keyword: String {
        switch self {
        case .add: return "header-add"
        case .replace: return "header-replace"
        case .delete: return "header-del"
        case .replaceRegex: return "header-replace-regex"
        }
    }

    public var description: String {
        switch self {
        case let .add(name, value), let .replace(name, value): return "\(keyword) \(name) \(value.debugDescription)"
        case let .delete(name): return "\(keyword) \(name)"
        case let .replaceRegex(name, pattern, replacement):
            return "\(keyword) \(name) \(pattern.source.debugDescription) \(replacement.debugDescription)"
        }
    }
}
