import Stack
import HTTP
import Testing
@testable import Engine

/// The answers Sluice writes itself, framed for the request they answer:
/// each must read as exactly one response, so that a kept-alive app's next
/// response starts where it should.
@Suite struct LocalAnswersTests {
    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// What an HTTP/1.1 client reading `bytes` as the answer to `method` gets: one response, and what is left over.
    func read(_ bytes: [UInt8], answering method: HTTPMethod) throws -> (status: Int, body: Int, leftover: Int) {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: method)
        var offset = 0, status = 0, body = 0
        for _ in 0 ..< 16 {
            let step = try bytes.withUnsafeBytes { try parser.parse(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch step {
            case let .head(head, consumed)?: status = head.status; offset += consumed
            case let .body(consumed)?: body += consumed; offset += consumed
            case let .end(consumed)?: body += consumed; offset += consumed; return (status, body, bytes.count - offset)
            case .upgraded?, nil: return (status, body, -1)
            }
        }
        return (status, body, -1)
    }

    @Test func aHeadRequestGetsTheHeadAlone() throws {
        let answer = LocalAnswers.framed(LocalAnswers.rejected(status: 403, body: "Blocked by Sluice\n"), answering: .head)
        #expect(text(answer).hasSuffix("\r\n\r\n"))
        #expect(text(answer).contains("Content-Length: 18\r\n"))
        #expect(try read(answer, answering: .head) == (403, 0, 0))
    }

    @Test(arguments: [204, 304])
    func bodilessStatusesHaveNoBodyAndNoLength(status: Int) throws {
        let answer = LocalAnswers.framed(LocalAnswers.response(status: status, headers: [("X-Mock", "1")], body: Array("hello".utf8)), answering: .get)
        #expect(!text(answer).contains("Content-Length"), "\(text(answer))")
        #expect(text(answer).contains("X-Mock: 1\r\n"))
        #expect(text(answer).hasSuffix("\r\n\r\n"))
        #expect(try read(answer, answering: .get) == (status, 0, 0))
    }

    @Test func otherAnswersAreUnchanged() throws {
        let answer = LocalAnswers.tinyGIF()
        #expect(LocalAnswers.framed(answer, answering: .get) == answer)
        #expect(LocalAnswers.framed(answer, answering: .post) == answer)
        #expect(try read(answer, answering: .get).leftover == 0)
    }
}

/// HTTP mode's plan sees one spelling of each URL (RequestURL.normalized):
/// a URL-REGEX line written for `http://ads.test/` also catches
/// `Host: ADS.test.` and `Host: ads.test:80`, which dodged it.
@Suite struct PlanURLSpellingTests {
    @Test(arguments: ["ads.test", "ADS.Test.", "ads.test:80", "Ads.test.:80"])
    func urlPatternsSeeOneSpelling(host: String) throws {
        let director = try ReplayFlowTests.director("[Rule]\nURL-REGEX,^http://ads\\.test/,REJECT\nFINAL,DIRECT\n")
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: host)
        let head = HTTPRequestHead(method: .get, target: "/banner", headers: headers)
        let planned = director.plan(head, facts: Engine.FlowFacts(key: ReplayFlowTests.key), now: Instant(nanoseconds: 0))
        #expect(planned.exchange.url == "http://ads.test/banner")
        guard case let .answer(bytes) = planned.route else {
            Issue.record("\(host): \(planned.route), not answered")
            return
        }
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 403"))
    }
}
