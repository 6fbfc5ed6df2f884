internal import HTTP
internal import Rules
internal import Sys

/// A message body [Body Rewrite] changes, held whole until the message ends:
/// a regex can match anywhere in it, and the new body's length is known only
/// then. The bytes are kept as they came (chunk framing and all), so a body
/// that turns out too large, not UTF-8, not decodable, or unchanged goes on
/// exactly as the peer sent it. A gzip, deflate, br or zstd body is decoded
/// for the lines, and a rewritten one goes decoded (no Content-Encoding): Sluice
/// does not compress again.
struct HeldBody: Sendable {
    /// The lines that matched, and their rewriter.
    let selection: BodyRewriteSelection
    let chunked: Bool
    /// Its Content-Encoding, in the order applied; [] for a plain body.
    let codings: [ContentDecoding.Coding]
    /// The body's bytes on the wire so far.
    private(set) var wire: [UInt8] = []

    init(_ selection: BodyRewriteSelection, chunked: Bool, codings: [ContentDecoding.Coding] = []) {
        self.selection = selection
        self.chunked = chunked
        self.codings = codings
    }

    /// The hold for a message with `headers` (a request's, or a response's
    /// `forResponse` allowed), or nil when its Content-Encoding is one
    /// Sluice cannot decode.
    init?(_ selection: BodyRewriteSelection, chunked: Bool, headers: HTTPHeaders) {
        guard let codings = ContentDecoding.codings(of: headers) else { return nil }
        self.init(selection, chunked: chunked, codings: codings)
    }

    /// Adds the body's next bytes; false, taking nothing, when they would
    /// pass the rewriter's `bodyLimit` (the caller sends what is held as it
    /// came and lets the rest follow).
    mutating func take(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard wire.count + bytes.count <= selection.rewriter.bodyLimit else { return false }
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

    /// The body's data with its Content-Encoding undone (at most
    /// the rewriter's `bodyLimit` bytes of it), or why it cannot be.
    var decoded: Result<[UInt8], ContentDecoding.Failure> {
        guard !codings.isEmpty else { return .success(content) }
        let content = self.content
        return Result { () throws(ContentDecoding.Failure) in try ContentDecoding.decode(content, codings: codings, limit: selection.rewriter.bodyLimit) }
    }

    /// What the lines made of the body: a new body, or nil when they change
    /// nothing (or it is not text); a failure when it does not decode. Pure:
    /// it runs on a `BodyRewriteWorker` thread for a large body.
    func rewrite() -> Result<[UInt8]?, ContentDecoding.Failure> {
        decoded.map { selection.apply(to: $0) }
    }

    /// The rewritten body, or nil when the rewrites change nothing (or it is
    /// not text, or does not decode: `about` names the message in that warning).
    func rewritten(about: @autoclosure () -> String) -> [UInt8]? {
        Self.rewritten(rewrite(), about: about())
    }

    /// `rewrite()`'s outcome as a new body or nil, a failure warned about.
    static func rewritten(_ outcome: Result<[UInt8]?, ContentDecoding.Failure>, about: @autoclosure () -> String) -> [UInt8]? {
        switch outcome {
        case let .success(rewritten):
            return rewritten
        case let .failure(failure):
            EngineLog.warning("\(about()): the body does not decode (\(failure)); [Body Rewrite] leaves it as it came")
            return nil
        }
    }

    /// The largest body rewritten on the loop's thread; a larger one goes to
    /// `BodyRewriteWorker` (a regex pair costs about 2 ms over 64 KiB, 150 ms
    /// over 4 MiB, and every flow would wait that long). Tests set it
    /// through SLUICE_BODY_REWRITE_ON_LOOP_BYTES (0: every body to the worker).
    static let onLoopBytes: Int = ProcessControl.environment("SLUICE_BODY_REWRITE_ON_LOOP_BYTES").flatMap { Int($0) } ?? 64 << 10

    /// Whether this body is rewritten off the loop. A compressed one is
    /// judged by what it may decode to (gzip or deflate can grow a thousand
    /// times, up to the rewriter's `bodyLimit`): past 1/64 of the threshold
    /// (1 KiB) it goes too.
    var runsOffTheLoop: Bool {
        codings.isEmpty ? wire.count > Self.onLoopBytes || Self.onLoopBytes == 0 : wire.count * 64 > Self.onLoopBytes
    }

    /// `headers` framing a new, plain body of `length` bytes:
    /// Content-Length, no Transfer-Encoding (a chunked body's trailer fields
    /// are not kept), no Content-Encoding, and no Content-MD5 or validators'
    /// digest of the old body.
    static func reframe(_ headers: inout HTTPHeaders, length: Int) {
        headers.remove(name: "Transfer-Encoding")
        headers.remove(name: "Content-Encoding")
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
            if head.status >= 200, ContentDecoding.codings(of: head.headers) == nil {
                EngineLog.warning("\(url): the response's body is encoded (\(head.headers["Content-Encoding"] ?? "")) though Sluice asked for identity, and Sluice decodes only gzip, deflate, br and zstd; [Body Rewrite] leaves it as it came")
            }
            return nil
        }
        return HeldBody(selection, chunked: head.isChunked, headers: head.headers)
    }

    /// The hold for a request with a body whose lines are `selection`, or
    /// nil (warned about, naming `about`) when its Content-Encoding is one
    /// Sluice cannot decode.
    static func forRequest(_ head: HTTPRequestHead, selection: BodyRewriteSelection, about: String) -> HeldBody? {
        guard let body = HeldBody(selection, chunked: head.isChunked, headers: head.headers) else {
            EngineLog.warning("\(about): the request's body is encoded (\(head.headers["Content-Encoding"] ?? "")), and Sluice decodes only gzip, deflate, br and zstd; [Body Rewrite] leaves it as it came")
            return nil
        }
        return body
    }

    /// Whether a response's body may be held for `matched` lines: a final
    /// response with a body Sluice can read: plain, or in gzip, deflate, br
    /// or zstd (the origin ignored `Accept-Encoding: identity`); not in
    /// `compress` or an unknown coding. A request to HEAD, a 204 or a 304
    /// has no body to change.
    static func mayHold(_ head: HTTPResponseHead, requestMethod: String) -> Bool {
        guard head.status >= 200, head.status != 204, head.status != 304, requestMethod != "HEAD", requestMethod != "CONNECT" else { return false }
        return ContentDecoding.codings(of: head.headers) != nil
    }
}
