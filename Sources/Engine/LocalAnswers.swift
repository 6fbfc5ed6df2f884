internal import HTTP
internal import Rules
internal import Sys

/// The HTTP responses Sluice writes itself: rejections, redirects and Map Local.
/// Each closes nothing by itself: keep-alive stays the app's choice.
enum LocalAnswers {
    static func response(status: Int, headers: [(String, String)], body: [UInt8]) -> [UInt8] {
        var fields = HTTPHeaders(headers.map { HTTPHeader(name: $0.0, value: $0.1) })
        fields.add(name: "X-Sluice", value: "local")
        return HTTPResponse.simple(status: status, headers: fields, body: body, keepAlive: true)
    }

    /// How many bytes of `answer` (a whole response, as made here) follow its head.
    static func bodyLength(of answer: [UInt8]) -> Int {
        guard answer.count >= 4 else { return 0 }
        for i in 0 ... answer.count - 4 where answer[i] == 0x0D && answer[i + 1] == 0x0A && answer[i + 2] == 0x0D && answer[i + 3] == 0x0A {
            return answer.count - i - 4
        }
        return 0
    }

    static func rejected(status: Int, body: String) -> [UInt8] {
        response(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(body.utf8))
    }

    static func tinyGIF() -> [UInt8] {
        response(status: 200, headers: [("Content-Type", "image/gif")], body: TinyGIF.bytes)
    }

    static func redirect(status: Int, location: String) -> [UInt8] {
        response(status: status, headers: [("Location", location)], body: [])
    }

    /// URL Rewrite's reject kinds, as Surge answers them.
    static func rejection(_ kind: RejectResponse) -> [UInt8] {
        response(status: kind.status, headers: kind.contentType.map { [("Content-Type", $0)] } ?? [], body: kind.body)
    }

    /// A Map Local entry's answer; a file that cannot be read is a 404 that says so.
    static func mapLocal(_ answer: MapLocalAnswer) -> [UInt8] {
        let headers = answer.headers.map { ($0.name, $0.value) }
        switch answer.body {
        case let .bytes(bytes):
            return response(status: answer.status, headers: headers, body: bytes)
        case let .file(path), let .directoryFile(path):
            guard let bytes = Files.read(path, limit: 64 << 20) else {
                return rejected(status: 404, body: "sluice: Map Local: cannot read \(path)\n")
            }
            return response(status: answer.status, headers: headers, body: bytes)
        }
    }

    /// `answer` as the request it answers may get it: a HEAD gets the head
    /// alone, whose Content-Length says what a GET would get (RFC 9110
    /// §9.3.2); a 1xx, 204 or 304 has no body (§6.4.1), nor a Content-Length
    /// here (§8.6 forbids it for 1xx and 204). A Map Local entry of status-code=204
    /// with data, or any answer to HEAD, sent its body, which a kept-alive
    /// app then read as the start of its next response.
    static func framed(_ answer: [UInt8], answering method: HTTPMethod) -> [UInt8] {
        guard let status = status(of: answer) else { return answer }
        let bodiless = (100 ..< 200).contains(status) || status == 204 || status == 304
        guard bodiless || method == .head else { return answer }
        guard bodiless else { return Array(answer[0 ..< answer.count - bodyLength(of: answer)]) }
        // The head again, less its Content-Length (a 304's would describe a
        // representation there is none of here), read with the parser the
        // upstream's heads go through.
        var parser = HTTPResponseParser()
        parser.expectResponse(to: method)
        guard case var .head(head, _)? = answer.withUnsafeBytes({ try? parser.parse($0) }) else { return answer }
        _ = head.headers.remove(name: "Content-Length")
        return head.serialized()
    }

    /// The status code of a response Sluice wrote.
    static func status(of bytes: [UInt8]) -> Int? {
        // "HTTP/1.1 NNN"
        guard bytes.count >= 12 else { return nil }
        return Int(String(decoding: bytes[9 ..< 12], as: UTF8.self))
    }
}
