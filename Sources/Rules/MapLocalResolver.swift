import HTTP

/// The response a [Map Local] entry gives.
public struct MapLocalAnswer: Sendable, Equatable, CustomStringConvertible {
    public enum Body: Sendable, Equatable {
        case bytes([UInt8])
        /// A file named by the profile (read by the engine, through Sys).
        case file(String)
        /// A file inside a dir entry's folder, already checked by `LocalPath`.
        case directoryFile(String)
    }

    public var status: Int
    /// As the profile lists them; the engine adds Content-Length.
    public var headers: [HeaderField]
    public var body: Body
    public var line: Int

    public init(status: Int, headers: [HeaderField], body: Body, line: Int) {
        self.status = status; self.headers = headers; self.body = body; self.line = line
    }

    public var description: String {
        let what: String
        switch body {
        case let .bytes(b): what = "\(b.count) bytes"
        case let .file(path): what = "file \(path)"
        case let .directoryFile(path): what = "file \(path)"
        }
        return "line \(line): \(status), \(what)"
    }
}

/// [Map Local], compiled once; first match wins.
public struct MapLocalResolver: Sendable {
    private let entries: [MapLocal]
    private let index: LiteralPrefixIndex

    public init(_ profile: Profile) { self.init(entries: profile.mapLocals) }

    public init(entries: [MapLocal]) {
        self.entries = entries
        index = LiteralPrefixIndex(prefixes: entries.map(\.regex.requiredPrefix), literals: entries.map(\.regex.requiredLiteral))
    }

    public func resolve(url: String) -> MapLocalAnswer? {
        for i in index.candidates(for: url) {
            let entry = entries[i]
            guard let match = entry.regex.firstMatch(in: url) else { continue }
            var headers = entry.headers
            switch entry.data {
            case let .text(text):
                return MapLocalAnswer(status: entry.statusCode, headers: headers, body: .bytes(Array(text.utf8)), line: entry.line)
            case let .base64(bytes):
                return MapLocalAnswer(status: entry.statusCode, headers: headers, body: .bytes(bytes), line: entry.line)
            case let .file(path):
                return MapLocalAnswer(status: entry.statusCode, headers: headers, body: .file(path), line: entry.line)
            case .tinyGIF:
                if !headers.contains(where: { HTTPHeader.namesEqual($0.name, "Content-Type") }) {
                    headers.append(HeaderField(name: "Content-Type", value: "image/gif"))
                }
                return MapLocalAnswer(status: entry.statusCode, headers: headers, body: .bytes(TinyGIF.bytes), line: entry.line)
            case let .directory(folder):
                // $1 names the file; its query and fragment are the request's, not part of the name.
                var relative = match.groups.count > 1 ? match.groups[1].map(String.init) ?? "" : ""
                if let cut = relative.firstIndex(where: { $0 == "?" || $0 == "#" }) { relative = String(relative[..<cut]) }
                guard let path = LocalPath.resolve(directory: folder, relative: relative) else {
                    return MapLocalAnswer(status: 404, headers: [], body: .bytes([]), line: entry.line)
                }
                return MapLocalAnswer(status: entry.statusCode, headers: headers, body: .directoryFile(path), line: entry.line)
            }
        }
        return nil
    }
}
