import Foundation
import Testing
import HTTP

@Suite struct HARTests {
    func object(_ json: String) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(json.utf8))
        return try #require(value as? [String: Any])
    }

    func sampleEntry() throws -> HAREntry {
        var requests = HTTPRequestParser()
        let request = try #require(try drive(&requests, bytes(
            "POST /api/v1/items?q=caf%C3%A9&x=a+b&flag HTTP/1.1\r\nHost: a.test\r\nCookie: sid=1; theme=dark\r\n"
                + "Content-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"name\":\"é\"}"), .whole).messages.first)
        var responses = HTTPResponseParser()
        responses.expectResponse(to: .post)
        let response = try #require(try drive(&responses, bytes(
            "HTTP/1.1 302 Found\r\nLocation: https://b.test/\r\nSet-Cookie: sid=2; Path=/; HttpOnly; Secure\r\n"
                + "Content-Type: application/octet-stream\r\nContent-Length: 3\r\n\r\n") + [0xFF, 0x00, 0x80],
            .whole).messages.first)
        return HAREntry(
            startedDateTime: "2026-11-30T15:40:50.123Z",
            request: HARRequest(request.head, body: request.body, bodySize: request.body.count),
            response: HARResponse(response.head, body: response.body, bodySize: 3),
            timings: HARTimings(dns: 0, connect: 1.5, send: 0.25, wait: 10, receive: 2),
            serverIPAddress: "10.0.0.2", connection: "40000",
            rule: "rewrite a.test b.test", policy: "rewrite", rewrittenFrom: "http://a.test/old", mocked: false, process: "curl[4242]")
    }

    @Test func logIsValidHAR12() throws {
        let entry = try sampleEntry()
        let log = HARLog(creatorVersion: "0.3", entries: [entry, entry])
        for pretty in [false, true] {
            let root = try object(log.json(pretty: pretty))
            let har = try #require(root["log"] as? [String: Any])
            #expect(har["version"] as? String == "1.2")
            #expect((har["creator"] as? [String: Any])?["name"] as? String == "sluice")
            let entries = try #require(har["entries"] as? [[String: Any]])
            #expect(entries.count == 2)
        }
    }

    /// Head, entries with their separators, and tail make exactly the pretty
    /// document: what `--har` streams is what it used to write at exit.
    @Test func theStreamedPiecesMakeThePrettyDocument() throws {
        let entry = try sampleEntry()
        var other = entry
        other.request.url = "http://a.test/\"quoted\"\n"
        for count in [0, 1, 3] {
            for comment in [nil, "2 exchanges left out: \"why\""] as [String?] {
                let entries = Array([entry, other, entry].prefix(count))
                let log = HARLog(creatorVersion: "0.1", entries: entries, comment: comment)
                var streamed = log.streamHead()
                for (i, entry) in entries.enumerated() {
                    streamed += HARLog.streamSeparator(first: i == 0) + entry.streamed()
                }
                streamed += log.streamTail(empty: entries.isEmpty)
                #expect(String(decoding: streamed, as: UTF8.self) == log.json(pretty: true) + "\n", "\(count) entries, comment \(comment ?? "none")")
            }
        }
    }

    @Test func entryFields() throws {
        let e = try object(try sampleEntry().json())
        #expect(e["startedDateTime"] as? String == "2026-11-30T15:40:50.123Z")
        #expect(e["time"] as? Double == 13.75)
        #expect(e["serverIPAddress"] as? String == "10.0.0.2")
        #expect(e["connection"] as? String == "40000")
        #expect(e["_rule"] as? String == "rewrite a.test b.test")
        #expect(e["_policy"] as? String == "rewrite")
        #expect(e["_rewrittenFrom"] as? String == "http://a.test/old")
        #expect(e["_mocked"] as? Bool == false)
        #expect(e["_process"] as? String == "curl[4242]")
        #expect(e["_bodyRewrites"] == nil)
        var rewritten = try sampleEntry()
        rewritten.bodyRewrites = [3, 4]
        #expect(try object(rewritten.json())["_bodyRewrites"] as? [Int] == [3, 4])
        #expect((e["cache"] as? [String: Any])?.isEmpty == true)

        let request = try #require(e["request"] as? [String: Any])
        #expect(request["method"] as? String == "POST")
        #expect(request["url"] as? String == "http://a.test/api/v1/items?q=caf%C3%A9&x=a+b&flag")
        #expect(request["httpVersion"] as? String == "HTTP/1.1")
        let query = try #require(request["queryString"] as? [[String: String]])
        #expect(query == [["name": "q", "value": "café"], ["name": "x", "value": "a b"], ["name": "flag", "value": ""]])
        let cookies = try #require(request["cookies"] as? [[String: Any]])
        #expect(cookies.map { $0["name"] as? String } == ["sid", "theme"])
        let headers = try #require(request["headers"] as? [[String: String]])
        #expect(headers.first == ["name": "Host", "value": "a.test"])
        let post = try #require(request["postData"] as? [String: Any])
        #expect(post["mimeType"] as? String == "application/json")
        #expect(post["text"] as? String == "{\"name\":\"é\"}")
        #expect(post["_encoding"] == nil)
        #expect(request["bodySize"] as? Int == 13)
        #expect((request["headersSize"] as? Int ?? 0) > 100)

        let response = try #require(e["response"] as? [String: Any])
        #expect(response["status"] as? Int == 302)
        #expect(response["statusText"] as? String == "Found")
        #expect(response["redirectURL"] as? String == "https://b.test/")
        let content = try #require(response["content"] as? [String: Any])
        #expect(content["size"] as? Int == 3)
        #expect(content["encoding"] as? String == "base64")
        #expect(content["text"] as? String == "/wCA")
        #expect(content["mimeType"] as? String == "application/octet-stream")
        let setCookie = try #require((response["cookies"] as? [[String: Any]])?.first)
        #expect(setCookie["name"] as? String == "sid")
        #expect(setCookie["path"] as? String == "/")
        #expect(setCookie["httpOnly"] as? Bool == true)
        #expect(setCookie["secure"] as? Bool == true)

        let timings = try #require(e["timings"] as? [String: Double])
        #expect(timings == ["blocked": -1, "dns": 0, "connect": 1.5, "send": 0.25, "wait": 10, "receive": 2, "ssl": -1])
    }

    @Test func bodiesTextOrBase64() {
        #expect(HARBody(Array("héllo".utf8)) == HARBody(text: "héllo"))
        #expect(HARBody([0xC3]) == HARBody(text: "ww==", encoding: "base64"))
        #expect(HARBody([]) == HARBody(text: ""))
    }

    /// A WebSocket's entry carries its messages as Chrome's HAR export does.
    @Test func webSocketMessagesAsChromeWritesThem() throws {
        var entry = try sampleEntry()
        entry.resourceType = "websocket"
        entry.webSocketMessages = [
            HARWebSocketMessage(type: "send", time: 1_796_486_117.25, opcode: 1, data: "hello"),
            HARWebSocketMessage(type: "receive", time: 1_796_486_117.5, opcode: 2, data: "AAEC", length: 300, compressed: true),
        ]
        let e = try object(entry.json())
        #expect(e["_resourceType"] as? String == "websocket")
        let messages = try #require(e["_webSocketMessages"] as? [[String: Any]])
        #expect(messages.count == 2)
        #expect(messages.first?["type"] as? String == "send" && messages.first?["opcode"] as? Int == 1)
        #expect(messages.first?["data"] as? String == "hello" && messages.first?["time"] as? Double == 1_796_486_117.25)
        #expect(messages.first?["_length"] == nil && messages.first?["_compressed"] == nil)
        #expect(messages.last?["type"] as? String == "receive" && messages.last?["_length"] as? Int == 300)
        #expect(messages.last?["_compressed"] as? Bool == true)
        #expect(!(try sampleEntry().json().contains("_webSocketMessages")))
    }

    @Test func optionalFieldsAreLeftOut() throws {
        let entry = HAREntry(startedDateTime: "t", time: 5, request: HARRequest(method: "GET", url: "http://a/"),
                             response: HARResponse(status: 200, statusText: "OK", content: HARContent(size: 0, mimeType: "")))
        let text = entry.json()
        #expect(!text.contains("_rule") && !text.contains("postData") && !text.contains("serverIPAddress"))
        #expect(!text.contains("\"text\""))
        let e = try object(text)
        #expect(e["time"] as? Int == 5)
    }
}
