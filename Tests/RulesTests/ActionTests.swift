import Testing
@testable import Rules
import HTTP

@Suite struct URLRewriterTests {
    let rewriter = URLRewriter(rewrites: [
        URLRewrite(regex: rx(#"^http://api\.test/(.*)"#), replacement: "http://api.staging.test/$1", mode: .header, line: 30),
        URLRewrite(regex: rx(#"^http://old\.test/(.*)"#), replacement: "http://new.test/$1", mode: .temporaryRedirect, line: 31),
        URLRewrite(regex: rx(#"^http://legacy\.test/(.*)"#), replacement: "http://new.test/$1", mode: .found, line: 32),
        URLRewrite(regex: rx(#"^http://ads\.test/"#), replacement: "_", mode: .reject, line: 33),
        URLRewrite(regex: rx(#"^http://ads\.test/"#), replacement: "_", mode: .reject200, line: 34), // shadowed
        URLRewrite(regex: rx(#"^http://img\.test/"#), replacement: "_", mode: .rejectImage, line: 35),
        URLRewrite(regex: rx(#"^http://dict\.test/"#), replacement: "_", mode: .rejectDictionary, line: 36),
        URLRewrite(regex: rx(#"^http://array\.test/"#), replacement: "_", mode: .rejectArray, line: 37),
        URLRewrite(regex: rx(#"^http://empty\.test/"#), replacement: "_", mode: .reject200, line: 38),
        URLRewrite(regex: rx(#"^http://www\.google\.cn"#), replacement: "http://www.google.com", mode: .found, line: 39),
    ])

    @Test func eachMode() {
        #expect(rewriter.rewrite(url: "http://api.test/v1/users?id=2") == .header(url: "http://api.staging.test/v1/users?id=2", line: 30))
        #expect(rewriter.rewrite(url: "http://old.test/upload") == .redirect(status: 307, location: "http://new.test/upload", line: 31))
        #expect(rewriter.rewrite(url: "http://legacy.test/a") == .redirect(status: 302, location: "http://new.test/a", line: 32))
        #expect(rewriter.rewrite(url: "http://ads.test/banner") == .reject(.reject, line: 33)) // first match wins
        #expect(rewriter.rewrite(url: "http://img.test/x.png") == .reject(.rejectImage, line: 35))
        #expect(rewriter.rewrite(url: "http://dict.test/") == .reject(.rejectDictionary, line: 36))
        #expect(rewriter.rewrite(url: "http://array.test/") == .reject(.rejectArray, line: 37))
        #expect(rewriter.rewrite(url: "http://empty.test/") == .reject(.reject200, line: 38))
        #expect(rewriter.rewrite(url: "http://other.test/") == .none)
        #expect(rewriter.rewrite(url: "https://api.test/x") == .none) // anchored at http://
        // Only the matched part is replaced: the path survives.
        #expect(rewriter.rewrite(url: "http://www.google.cn/search?q=1") == .redirect(status: 302, location: "http://www.google.com/search?q=1", line: 39))
    }

    @Test func rejectBodies() {
        #expect(RejectResponse.reject.status == 404 && RejectResponse.reject.body.isEmpty)
        #expect(RejectResponse.reject200.status == 200 && RejectResponse.reject200.body.isEmpty)
        #expect(RejectResponse.rejectDictionary.body == Array("{}".utf8))
        #expect(RejectResponse.rejectArray.body == Array("[]".utf8))
        let gif = RejectResponse.rejectImage.body
        #expect(gif.count == 43 && Array(gif.prefix(6)) == Array("GIF89a".utf8) && gif.last == 0x3b)
        #expect(gif[6] == 1 && gif[8] == 1) // 1x1
        #expect(RejectResponse.rejectImage.contentType == "image/gif")
        #expect(RejectResponse(.header) == nil && RejectResponse(.found) == nil)
    }
}

@Suite struct HeaderRewriterTests {
    let rewriter = HeaderRewriter(rewrites: [
        HeaderRewrite(direction: .request, regex: rx(#"^http://api\.staging\.test/"#), operation: .add(name: "X-Env", value: "staging"), line: 40),
        HeaderRewrite(direction: .request, regex: rx(#"^http://api\.test/"#), operation: .replace(name: "User-Agent", value: "sluice-test/1.0"), line: 41),
        HeaderRewrite(direction: .request, regex: rx(#"^http://([a-z0-9-]+\.)*test/"#), operation: .delete(name: "X-Debug-Token"), line: 42),
        HeaderRewrite(direction: .response, regex: rx(#"^http://api\.staging\.test/"#),
                      operation: .replaceRegex(name: "Set-Cookie", pattern: rx(#"(?i)domain=\.?api\.staging\.test"#), replacement: "Domain=api.test"), line: 43),
        HeaderRewrite(direction: .response, regex: rx(#"^http://api\.staging\.test/"#),
                      operation: .replaceRegex(name: "Location", pattern: rx(#"^http://api\.staging\.test/(.*)$"#), replacement: "http://api.test/$1"), line: 44),
    ])

    @Test func requestOps() {
        var headers = [HeaderField(name: "Host", value: "api.staging.test"), HeaderField(name: "x-debug-token", value: "1"),
                       HeaderField(name: "X-Debug-Token", value: "2"), HeaderField(name: "Accept", value: "*/*")]
        let lines = rewriter.apply(.request, url: "http://api.staging.test/v1", to: &headers)
        #expect(lines == [40, 42])
        #expect(headers == [HeaderField(name: "Host", value: "api.staging.test"), HeaderField(name: "Accept", value: "*/*"),
                            HeaderField(name: "X-Env", value: "staging")])
    }

    @Test func replaceOnlyTouchesPresentFields() {
        var none = [HeaderField(name: "Accept", value: "*/*")]
        rewriter.apply(.request, url: "http://api.test/", to: &none)
        #expect(none == [HeaderField(name: "Accept", value: "*/*")])
        var two = [HeaderField(name: "user-agent", value: "a"), HeaderField(name: "User-Agent", value: "b")]
        rewriter.apply(.request, url: "http://api.test/", to: &two)
        #expect(two.map(\.value) == ["sluice-test/1.0", "sluice-test/1.0"])
        #expect(two[0].name == "user-agent") // the field's own spelling stays
    }

    @Test func responseOps() {
        var headers = [HeaderField(name: "Set-Cookie", value: "sid=1; Domain=.API.staging.test; Path=/"),
                       HeaderField(name: "Set-Cookie", value: "x=2; domain=api.staging.test, y=3; domain=api.staging.test"),
                       HeaderField(name: "Location", value: "http://api.staging.test/login?next=/"),
                       HeaderField(name: "X-Debug-Token", value: "kept")]
        let lines = rewriter.apply(.response, url: "http://api.staging.test/v1", to: &headers)
        #expect(lines == [43, 44])
        #expect(headers[0].value == "sid=1; Domain=api.test; Path=/")
        #expect(headers[1].value == "x=2; Domain=api.test, y=3; Domain=api.test")
        #expect(headers[2].value == "http://api.test/login?next=/")
        #expect(headers[3].value == "kept") // request-only rule
        var other = headers
        #expect(rewriter.apply(.response, url: "http://elsewhere.example/", to: &other).isEmpty && other == headers)
    }

    /// HTTP mode rewrites a head's own `HTTPHeaders` in place: every
    /// operation must leave them as it leaves Rules' list.
    @Test func aHeadsHeadersGetTheSameRewrites() {
        let fields = [HeaderField(name: "Host", value: "api.staging.test"), HeaderField(name: "x-debug-token", value: "1"),
                      HeaderField(name: "Set-Cookie", value: "sid=1; Domain=.API.staging.test"), HeaderField(name: "X-Debug-Token", value: "2"),
                      HeaderField(name: "location", value: "http://api.staging.test/a"), HeaderField(name: "user-agent", value: "a")]
        for (direction, url) in [(HeaderRewriteDirection.request, "http://api.staging.test/v1"), (.request, "http://api.test/"),
                                 (.response, "http://api.staging.test/v1"), (.response, "http://elsewhere.example/")] {
            var list = fields
            var head = HTTPHeaders(fields.map { HTTPHeader(name: $0.name, value: $0.value) })
            let matched = rewriter.matching(direction, url: url)
            rewriter.apply(matched, to: &list)
            rewriter.apply(matched, to: &head)
            #expect(head.map { HeaderField(name: $0.name, value: $0.value) } == list, "\(direction) \(url)")
        }
    }
}

@Suite struct MapLocalTests {
    let resolver = MapLocalResolver(entries: [
        MapLocal(regex: rx(#"^http://api\.test/v1/config$"#), data: .text(#"{"feature":true}"#), statusCode: 200,
                 headers: [HeaderField(name: "Content-Type", value: "application/json")], line: 50),
        MapLocal(regex: rx(#"^http://api\.test/v1/fail$"#), data: .text(""), statusCode: 503, line: 51),
        MapLocal(regex: rx(#"^http://img\.test/.*\.png$"#), data: .file("/etc/sluice/mocks/placeholder.png"),
                 headers: [HeaderField(name: "Content-Type", value: "image/png")], line: 52),
        MapLocal(regex: rx(#"^http://static\.test/assets/(.*)$"#), data: .directory("/srv/cache/static"), line: 53),
        MapLocal(regex: rx(#"^http://b64\.test/"#), data: .base64([0, 1, 2, 255]), statusCode: 201, line: 54),
        MapLocal(regex: rx(#"^http://pixel\.test/"#), data: .tinyGIF, line: 55),
    ])

    @Test func eachDataType() {
        #expect(resolver.resolve(url: "http://api.test/v1/config") == MapLocalAnswer(
            status: 200, headers: [HeaderField(name: "Content-Type", value: "application/json")],
            body: .bytes(Array(#"{"feature":true}"#.utf8)), line: 50))
        #expect(resolver.resolve(url: "http://api.test/v1/fail") == MapLocalAnswer(status: 503, headers: [], body: .bytes([]), line: 51))
        #expect(resolver.resolve(url: "http://img.test/a/b.png")?.body == .file("/etc/sluice/mocks/placeholder.png"))
        #expect(resolver.resolve(url: "http://b64.test/x") == MapLocalAnswer(status: 201, headers: [], body: .bytes([0, 1, 2, 255]), line: 54))
        let gif = resolver.resolve(url: "http://pixel.test/t.gif")
        #expect(gif?.body == .bytes(TinyGIF.bytes))
        #expect(gif?.headers == [HeaderField(name: "Content-Type", value: "image/gif")])
        #expect(resolver.resolve(url: "http://api.test/v1/config2") == nil)
    }

    @Test func directoryUsesTheCaptureSafely() {
        #expect(resolver.resolve(url: "http://static.test/assets/css/site.css?v=3") ==
            MapLocalAnswer(status: 200, headers: [], body: .directoryFile("/srv/cache/static/css/site.css"), line: 53))
        for escape in ["../../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd", "a/..%2f..%2fsecret", "%2fetc/passwd", "", "x%00.css"] {
            #expect(resolver.resolve(url: "http://static.test/assets/\(escape)") ==
                MapLocalAnswer(status: 404, headers: [], body: .bytes([]), line: 53), "\(escape)")
        }
    }
}
