import Testing
import HTTP

@Suite struct HeadTests {
    func parseRequest(_ s: String) throws -> HTTPRequestHead {
        var parser = HTTPRequestParser()
        return try #require(try drive(&parser, bytes(s), .whole).messages.first?.head)
    }

    @Test func serializedParsesBackToTheSameHead() throws {
        let text = "POST /a?b=c HTTP/1.1\r\nhost: a.test\r\nX-Dup: 1\r\nx-dup: 2\r\nContent-Length: 0\r\n\r\n"
        let head = try parseRequest(text)
        #expect(head.serialized() == bytes(text))
        #expect(try parseRequest(String(decoding: head.serialized(), as: UTF8.self)) == head)
        // OWS around values goes; a head written back is normalised, not altered.
        let spaced = try parseRequest("GET / HTTP/1.0\r\nX:   v  \r\n\r\n")
        #expect(String(decoding: spaced.serialized(), as: UTF8.self) == "GET / HTTP/1.0\r\nX: v\r\n\r\n")
    }

    @Test func lookupIgnoresCaseAndKeepsOrder() throws {
        let head = try parseRequest("GET / HTTP/1.1\r\nHost: a\r\nAccept: x\r\nACCEPT: y\r\nConnection: keep-alive, Upgrade\r\n\r\n")
        #expect(head.headers["accept"] == "x")
        #expect(head.headers.values("Accept") == ["x", "y"])
        #expect(head.headers.count(of: "aCCept") == 2)
        #expect(head.headers.hasToken("upgrade", in: "connection"))
        #expect(!head.headers.hasToken("close", in: "connection"))
        #expect(head.headers["Missing"] == nil)
    }

    /// `hasToken` walks the list in place; `tokens` builds it. They agree on
    /// every element, whatever the commas and whitespace around it.
    @Test func hasTokenFindsWholeListElementsOnly() {
        let headers: HTTPHeaders = ["Connection": " , keep-alive,\tCLOSE ,", "X": "closed, upgrade-x", "connection": "Upgrade"]
        for token in ["keep-alive", "close", "upgrade", "Close"] {
            #expect(headers.hasToken(token, in: "CONNECTION"), "\(token)")
        }
        for token in ["closed", "clos", "keep", "upgrade-x", "", "keep-alive,"] {
            #expect(!headers.hasToken(token, in: "Connection"), "\(token)")
        }
        #expect(!headers.hasToken("close", in: "Missing"))
        #expect(headers.hasToken("upgrade-x", in: "x"))
        let empty: HTTPHeaders = ["Connection": ""]
        #expect(!empty.hasToken("close", in: "Connection"))
        for token in ["keep-alive", "close", "upgrade", "closed", "x"] {
            #expect(headers.hasToken(token, in: "Connection") == headers.tokens("Connection").contains { $0.lowercased() == token.lowercased() })
        }
    }

    @Test func mutationAddsReplacesAndRemoves() {
        var headers: HTTPHeaders = ["Host": "a", "Cookie": "1", "X": "keep", "cookie": "2"]
        headers.add(name: "Via", value: "sluice")
        headers.replaceOrAdd(name: "COOKIE", value: "3")
        #expect(headers.fields.map(\.description) == ["Host: a", "COOKIE: 3", "X: keep", "Via: sluice"])
        headers.replaceOrAdd(name: "New", value: "n")
        #expect(headers.last == HTTPHeader(name: "New", value: "n"))
        #expect(headers.remove(name: "x") == 1)
        #expect(headers.remove(name: "x") == 0)
        #expect(headers.map(\.name) == ["Host", "COOKIE", "Via", "New"])
    }

    @Test func serializationCannotBeSplitByInjectedLineBreaks() throws {
        var head = HTTPRequestHead(method: "GET", target: "/a b\r\nX: y", headers: ["Host": "a"])
        head.headers.add(name: "X-Evil", value: "1\r\nInjected: yes")
        let text = String(decoding: head.serialized(), as: UTF8.self)
        #expect(text == "GET /a_b__X:_y HTTP/1.1\r\nHost: a\r\nX-Evil: 1  Injected: yes\r\n\r\n")
        #expect(!HTTPHeader.isValidValue("1\r\nInjected: yes"))
        #expect(HTTPHeader.isValidValue("ok\tvalue é"))
        #expect(HTTPHeader.isValidName("X-Ok"))
        #expect(!HTTPHeader.isValidName("X Bad"))
        #expect(!HTTPHeader.isValidName(""))
    }

    @Test func keepAlivePerVersionAndConnection() throws {
        #expect(try parseRequest("GET / HTTP/1.1\r\nHost: a\r\n\r\n").keepAlive)
        #expect(try !parseRequest("GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n").keepAlive)
        #expect(try !parseRequest("GET / HTTP/1.0\r\n\r\n").keepAlive)
        #expect(try parseRequest("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keepAlive)
        #expect(HTTPResponseHead(version: .http1_0, status: 200).keepAlive == false)
    }

    @Test func absoluteURLs() throws {
        #expect(try parseRequest("GET /p?q=1 HTTP/1.1\r\nHost: a.test:8080\r\n\r\n").absoluteURL() == "http://a.test:8080/p?q=1")
        #expect(try parseRequest("GET /p HTTP/1.1\r\nHost: a.test\r\n\r\n").absoluteURL(defaultScheme: "https") == "https://a.test/p")
        let proxyForm = try parseRequest("GET http://b.test/x HTTP/1.1\r\nHost: ignored\r\n\r\n")
        #expect(proxyForm.absoluteURL() == "http://b.test/x")
        #expect(proxyForm.host == "b.test")
        #expect(try parseRequest("GET HTTPS://u@c.test:1/ HTTP/1.1\r\nHost: c\r\n\r\n").host == "c.test:1")
        #expect(try parseRequest("OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n").absoluteURL() == "http://a.test")
        #expect(try parseRequest("GET / HTTP/1.0\r\n\r\n").absoluteURL() == nil)
        #expect(try parseRequest("GET / HTTP/1.1\r\nHost: [fd00::1]:80\r\n\r\n").absoluteURL() == "http://[fd00::1]:80/")
        // A target that starts with "/" is origin-form, even one that looks like an authority.
        #expect(try parseRequest("GET //b.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n").absoluteURL() == "http://a.test//b.test/x")
        // Heads built in code: the Host value's optional whitespace goes, a bare target gets its "/".
        let built = HTTPRequestHead(method: .get, target: "p?x", headers: ["Host": " \ta.test:81 \t"])
        #expect(built.absoluteURL() == "http://a.test:81/p?x")
        #expect(HTTPRequestHead(method: .get, target: "", headers: ["Host": "a.test"]).absoluteURL() == "http://a.test/")
        #expect(HTTPRequestHead(method: .get, target: "/", headers: ["Host": " \t "]).absoluteURL() == nil)
    }

    @Test func descriptionsReadLikeATrace() throws {
        #expect(try parseRequest("GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n").description == "GET /x HTTP/1.1 host=a.test")
        let upload = try parseRequest("PUT /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n")
        #expect(upload.description == "PUT /u HTTP/1.1 host=a chunked expect=100-continue")
        let redirect = HTTPResponseHead(status: 301, headers: ["Location": "/new", "Content-Length": "0"])
        #expect(redirect.description == "HTTP/1.1 301 Moved Permanently length=0 location=/new")
        #expect(HTTPParseStep<HTTPRequestHead>.body(consumed: 3).description == "body 3")
    }

    @Test func responseSerialization() {
        let head = HTTPResponseHead(status: 404, headers: ["Content-Length": "0"])
        #expect(String(decoding: head.serialized(), as: UTF8.self) == "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        let custom = HTTPResponseHead(version: .http1_0, status: 599, reason: "")
        #expect(String(decoding: custom.serialized(), as: UTF8.self) == "HTTP/1.0 599 \r\n\r\n")
    }
}
