import Testing
@testable import Engine
import Rules
import Stack
import Wire

/// Replay's reading of one connection (ReplayFlow) and its decisions
/// (FlowDirector.judge), fed bytes directly: the byte streams a
/// PassiveTCPTable would hand on.
@Suite struct ReplayFlowTests {
    static let key = FlowKey(transport: .tcp, appAddress: IPAddress("10.0.0.1")!, appPort: 40000,
                             destinationAddress: IPAddress("198.18.0.7")!, destinationPort: 80)

    static func feed(_ text: String, byteByByte: Bool = false, into body: (UnsafeRawBufferPointer) -> Void) {
        let bytes = Array(text.utf8)
        bytes.withUnsafeBytes { buffer in
            if byteByByte {
                for i in 0 ..< buffer.count { body(UnsafeRawBufferPointer(rebasing: buffer[i ..< i + 1])) }
            } else {
                body(buffer)
            }
        }
    }

    static func director(_ text: String) throws -> FlowDirector {
        guard case let .success(profile) = ProfileParser.parse(text, file: "p.conf", baseDirectory: "/") else {
            Issue.record("profile does not parse")
            throw CancellationError()
        }
        return FlowDirector(profile: profile, previous: nil)
    }

    @Test func pipelinedRequestsPairWithTheirResponses() {
        let flow = ReplayFlow(id: 1, key: Self.key, started: 1, sawHandshake: true)
        Self.feed("GET /a HTTP/1.1\r\nHost: x.test\r\n\r\nPOST /b HTTP/1.1\r\nHost: x.test\r\nContent-Length: 3\r\n\r\nabcHEAD /c HTTP/1.1\r\nHost: x.test\r\n\r\n",
                  byteByByte: true) { flow.up($0, at: 10) }
        Self.feed("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                  + "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nnot\r\n0\r\n\r\n"
                  + "HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\n") { flow.down($0, at: 20) }
        flow.finish(at: 30)
        #expect(flow.isHTTP)
        #expect(flow.exchanges.map { "\($0.head.method.rawValue) \($0.head.target)" } == ["GET /a", "POST /b", "HEAD /c"])
        #expect(flow.exchanges.map { $0.response?.status } == [200, 404, 200])
        #expect(flow.exchanges.map(\.requestBodyBytes) == [0, 3, 0])
        // Chunked bodies count their framing (bytes as transferred); HEAD's response has no body whatever Content-Length says.
        #expect(flow.exchanges.map(\.responseBodyBytes) == [2, 3 + 5 + 3 + 2, 0])
        #expect(flow.httpStopped == nil)
    }

    @Test func aGapStopsHTTPReading() {
        let flow = ReplayFlow(id: 1, key: Self.key, started: 1, sawHandshake: true)
        Self.feed("GET /a HTTP/1.1\r\nHost: x.test\r\n\r\n") { flow.up($0, at: 10) }
        flow.gap(100, up: true)
        Self.feed("GET /b HTTP/1.1\r\nHost: x.test\r\n\r\n") { flow.up($0, at: 10) }
        #expect(flow.exchanges.count == 1)
        #expect(flow.httpStopped?.contains("100 bytes missing") == true)
    }

    @Test func theClientHelloNamesATLSFlow() {
        let name = Array("secure.test".utf8)
        var sni: [UInt8] = [0, 0] + Self.u16(name.count + 5) + Self.u16(name.count + 3) + [0] + Self.u16(name.count) + name
        sni = Self.u16(sni.count) + sni
        var hello: [UInt8] = [3, 3] + [UInt8](repeating: 7, count: 32) + [0] + [0, 2, 0x13, 0x01] + [1, 0] + sni
        hello = [1, 0] + Self.u16(hello.count) + hello
        let record: [UInt8] = [0x16, 3, 1] + Self.u16(hello.count) + hello
        let flow = ReplayFlow(id: 1, key: Self.key, started: 1, sawHandshake: true)
        record.withUnsafeBytes { buffer in
            // Split across two segments: the sniffer waits for the rest.
            flow.up(UnsafeRawBufferPointer(rebasing: buffer[..<20]), at: 1)
            flow.up(UnsafeRawBufferPointer(rebasing: buffer[20...]), at: 2)
        }
        #expect(flow.serverName == "secure.test")
    }

    static func u16(_ n: Int) -> [UInt8] { [UInt8(n >> 8), UInt8(n & 0xff)] }

    @Test func aFakeIPsNameDecidesAsLive() throws {
        let director = try Self.director("[Rule]\nDOMAIN,api.test,REJECT-DROP\nFINAL,DIRECT\n")
        let flow = ReplayFlow(id: 1, key: Self.key, started: 1, sawHandshake: true)
        flow.dnsName = "api.test"
        flow.dnsNameIsFake = true
        Self.feed("GET / HTTP/1.1\r\nHost: other.test\r\n\r\n") { flow.up($0, at: 10) }
        let verdict = director.judge(flow)
        #expect(verdict.domain == "api.test")
        #expect(verdict.domainSource == "dns")
        #expect(verdict.rule == "p.conf:2: DOMAIN,api.test,REJECT-DROP → REJECT-DROP")
        #expect(verdict.action == .drop)
        #expect(verdict.requests.map(\.action) == [.drop])
    }

    @Test func httpModePlansEachRequest() throws {
        let director = try Self.director("""
        [Rule]
        DOMAIN,blocked.test,REJECT
        FINAL,DIRECT
        [Map Local]
        ^http://x\\.test/mock$ data-type=text data="hi" status-code=201
        [URL Rewrite]
        ^http://x\\.test/old http://x.test/new 302
        """)
        let flow = ReplayFlow(id: 1, key: Self.key, started: 1, sawHandshake: true)
        Self.feed("GET /mock HTTP/1.1\r\nHost: x.test\r\n\r\nGET /old HTTP/1.1\r\nHost: x.test\r\n\r\nGET /x HTTP/1.1\r\nHost: x.test\r\n\r\nGET / HTTP/1.1\r\nHost: blocked.test\r\n\r\n") {
            flow.up($0, at: 10)
        }
        let verdict = director.judge(flow)
        #expect(verdict.requests.map(\.action) == [.mock, .redirect, .forward, .reject])
        #expect(verdict.requests.map(\.localStatus) == [201, 302, nil, 403])
        #expect(verdict.requests.map(\.rule) == ["p.conf:5: Map Local", "p.conf:7: URL Rewrite", "p.conf:3: FINAL,DIRECT → DIRECT",
                                                 "p.conf:2: DOMAIN,blocked.test,REJECT → REJECT"])
        #expect(verdict.requests.map(\.policy) == ["local", "302", "DIRECT", "REJECT"])
        let table = ReplayReport(flows: [(flow, verdict)]).table()
        #expect(table.count == 5)
        #expect(table[1].hasSuffix("mock 201") && table[2].hasSuffix("redirect 302") && table[3].hasSuffix("forward") && table[4].hasSuffix("reject 403"),
                "\(table.joined(separator: "\n"))")
    }
}
