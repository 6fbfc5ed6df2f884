/// One line of [Map Local]: `REGEX data-type=... data=... status-code=... header=...`.
public struct MapLocal: Equatable, Sendable, CustomStringConvertible {
    /// Searched in the absolute request URL.
    public var regex: CompiledRegex
    public var data: MapLocalData
    public var statusCode: Int
    /// Sent in order; Content-Length is always Sluice's own.
    public var headers: [HeaderField]
    public var line: Int

    public init(regex: CompiledRegex, data: MapLocalData, statusCode: Int = 200, headers: [HeaderField] = [], line: Int) {
        self.regex = regex; self.data = data; self.statusCode = statusCode; self.headers = headers; self.line = line
    }

    public var description: String {
        var text = "\(regex.source) data-type=\(data.dataType.rawValue)"
        switch data {
        case let .text(body): text += " data=\(body.debugDescription)"
        case let .base64(bytes): text += " data=(\(bytes.count) bytes)"
        case let .file(path), let .directory(path): text += " data=\(path.debugDescription)"
        case .tinyGIF: break
        }
        text += " status-code=\(statusCode)"
        if !headers.isEmpty { text += " header=\(headers.map(\.description).joined(separator: "|").debugDescription)" }
        return text
    }
}

/// The body of a Map Local answer.
public enum MapLocalData: Equatable, Sendable {
    /// The text itself, sent as UTF-8.
    case text(String)
    /// Decoded at load from the base64 in the profile.
    case base64([UInt8])
    /// An absolute path (relative ones are resolved against the profile's folder at load).
    case file(String)
    /// An absolute folder; the request's first capture group names the file inside it,
    /// and a name that would leave the folder ("..", absolute) gets 404.
    case directory(String)
    /// A 1x1 transparent GIF.
    case tinyGIF

    public var dataType: MapLocalDataType {
        switch self {
        case .text: return .text
        case .base64: return .base64
        case .file: return .file
        case .directory: return .directory
        case .tinyGIF: return .tinyGIF
        }
    }
}

public enum MapLocalDataType: String, Equatable, Sendable, CaseIterable {
    case text
    case base64
    case file
    case directory = "dir"
    case tinyGIF = "tiny-gif"
}

/// One `Name:Value` of a header list.
public struct HeaderField: Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var value: String

    public init(name: String, value: String) { self.name = name; self.value = value }

    public var description: String { "\(name):\(value)" }
}
