internal import HTTP
internal import Rules

/// A message body [Body Rewrite] changes, held whole until the message ends:
/// a regex can match anywhere in it, and the new body's length is known only
/// then. The bytes are kept as they came (chunk framing and all), so a body
/// that turns out too large, not UTF-8, or unchanged goes on exactly as the
/// peer sent it.
struct HeldBody {
    /// The lines that matched, and their rewriter.
    let selection: BodyRewriteSelection
    let chunked: Bool
    /// The body's bytes on the wire so far.
    private(set) var wire: [UInt8] = []

    init(_ selection: BodyRewriteSelection, chunked: Bool) {
        self.selection = selection
        self.chunked = chunked
    }

    /// Adds the body's next bytes; false, taking nothing, when they would
    /// pass `BodyRewriter.bodyLimit` (the caller sends what is held as it
    /// came and lets the rest follow).
    mutating func take(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard wire.count + bytes.count <= BodyRewriter.bodyLimit else { return false }
        wire += bytes
        return true
    }

    /// The body's data: without chunk framing.
    var content: [UInt8] {
        guard chunked else { return wire }
        var data: [UInt8] = []
        var decoder: HTTPChunkedContent? = HTTPChunkedContent()
        wire.withUnsafeBytes { HTTPChunkedContent.keep($0, content: &decoder, into: &data, limit: .max) }
        return data
    }

    /// The rewritten body, or nil when the rewrites change nothing (or it is not text).
    var rewritten: [UInt8]? { selection.apply(to: content) }

    /// `headers` framing a body of `length` bytes: Content-Length, no
    /// Transfer-Encoding (a chunked body's trailer fields are not kept), and
    /// no Content-MD5 or validators' digest of the old body.
    static func reframe(_ headers: inout HTTPHeaders, length: Int) {
        headers.remove(name: "Transfer-Encoding")
        headers.remove(name: "Content-Length")
        headers.remove(name: "Trailer")
        headers.remove(name: "Content-MD5")
        headers.remove(name: "Digest")
        headers.remove(name: "Content-Digest")
        headers.remove(name: "Repr-Digest")
        headers.add(name: "Content-Length", value: String(length))
    }

    /// The hold for a final response to a request whose [Body Rewrite]
    /// lines are `selection`, or nil when it is not held (no line, or
    /// `mayHold` says no; an encoded body is warned about, naming `url`).
    static func forResponse(_ head: HTTPResponseHead, selection: BodyRewriteSelection?, method: String, url: String) -> HeldBody? {
        guard let selection else { return nil }
        guard mayHold(head, requestMethod: method) else {
            if head.status >= 200, !isPlain(head.headers) {
                EngineLog.warning("\(url): the response's body is encoded (\(head.headers["Content-Encoding"] ?? "")) though Sluice asked for identity; [Body Rewrite] leaves it as it came")
            }
            return nil
        }
        return HeldBody(selection, chunked: head.isChunked)
    }

    /// Whether a response's body may be held for `matched` lines: a final
    /// response with a body Sluice can read as text. An encoded body (the
    /// origin ignored `Accept-Encoding: identity`) is not: Sluice does not
    /// decompress. A request to HEAD, a 204 or a 304 has no body to change.
    static func mayHold(_ head: HTTPResponseHead, requestMethod: String) -> Bool {
        guard head.status >= 200, head.status != 204, head.status != 304, requestMethod != "HEAD", requestMethod != "CONNECT" else { return false }
        return isPlain(head.headers)
    }

    /// No Content-Encoding, or only identity.
    static func isPlain(_ headers: HTTPHeaders) -> Bool {
        headers.values("Content-Encoding").allSatisfy { value in
            value.split(separator: ",").allSatisfy { $0.filter { $0 != " " && $0 != "\t" }.lowercased() == "identity" }
        }
    }
}
