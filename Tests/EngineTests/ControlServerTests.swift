import Foundation
import Glibc
import HTTP
import Capture
import Sys
import Testing
import Wire
@testable import Engine

/// A ControlTarget that records what the API asked of it.
final class FakeControlTarget: ControlTarget {
    var openFlows: [ControlFlow] = {
        var a = ControlFlow(id: 17, transport: "TCP", appAddress: "10.233.0.1", appPort: 40000,
                            destinationAddress: "198.18.0.5", destinationPort: 443, state: "ESTABLISHED")
        a.domain = "api.example.test"
        a.domainSource = "dns"
        a.rule = "p.conf:12: DOMAIN-SUFFIX,example.test,Proxies"
        a.policy = "Proxies → proxy-a"
        a.bytesUp = 517
        a.bytesDown = 1_048_576
        a.ageSeconds = 2.5
        let b = ControlFlow(id: 18, transport: "UDP", appAddress: "fd00:233::1", appPort: 5353,
                            destinationAddress: "fd00:88::2", destinationPort: 53, state: "open")
        return [a, b]
    }()
    var closed: [UInt64] = []
    var selections: [String: String] = ["Proxies": "proxy-a"]
    var reloads = 0
    var reloadErrors: [String]?
    /// Reloads are "read on a worker": answered by `finishReloads`, read number `readNumber` each.
    var reloadsTakeTime = false
    var readNumber = 1

    func flows() -> [ControlFlow] { openFlows }

    func close(id: UInt64) -> Bool {
        guard let index = openFlows.firstIndex(where: { $0.id == id }) else { return false }
        openFlows.remove(at: index)
        closed.append(id)
        return true
    }

    func writeStatistics(into json: inout JSONWriter) {
        json.beginObject()
        json.field("uptime-seconds", 61.0)
        json.key("open")
        json.beginObject()
        json.field("tcp", 2)
        json.field("udp", 1)
        json.field("sniffing", 4)
        json.field("http-sessions", 5)
        json.endObject()
        json.key("tunnel")
        var counters = TunnelStatistics()
        counters.tcpFlows = 3
        counters.bytesToApp = 2048
        counters.writeJSON(into: &json)
        json.key("statistics")
        json.beginArray()
        json.endArray()
        json.endObject()
    }

    func groups() -> [ControlGroup] {
        [ControlGroup(name: "Proxies", kind: "select", selected: selections["Proxies"],
                      members: [.init(name: "proxy-a", health: "unchecked"), .init(name: "proxy-b", health: "unchecked")]),
         ControlGroup(name: "Auto", kind: "fallback", selected: "proxy-a",
                      members: [.init(name: "proxy-a", health: "up", latencyMilliseconds: 12)])]
    }

    func select(group: String, member: String) -> Result<String, ControlFailure> {
        if group == "Auto" { return .failure(ControlFailure(kind: .conflict, message: "Auto is a fallback group")) }
        guard group == "Proxies" else { return .failure(ControlFailure(kind: .notFound, message: "no group \(group)")) }
        guard ["proxy-a", "proxy-b"].contains(member) else { return .failure(ControlFailure(kind: .notFound, message: "no member \(member)")) }
        selections[group] = member
        return .success("Proxies → \(member)")
    }

    var recent = RecentRequests(capacity: 4)
    var recentAsked: [(after: UInt64?, limit: Int)] = []

    func recentRequests(after: UInt64?, limit: Int) -> RecentRequests.Page {
        recentAsked.append((after, limit))
        return recent.page(after: after, limit: limit)
    }

    func reload() -> ControlReload {
        reloads += 1
        if reloadsTakeTime { return .reading(generation: readNumber) }
        if let reloadErrors { return .finished(.failure(ControlFailure(kind: .invalid, message: "p.conf has errors", errors: reloadErrors))) }
        return .finished(.success("reloaded p.conf"))
    }
}

/// A control server on a socket in a fresh temporary folder, driven by hand on this thread.
final class ControlFixture {
    let directory: String
    let path: String
    let server: ControlServer
    let target = FakeControlTarget()

    init() throws {
        directory = "/tmp/sluice-control-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        path = directory + "/control.sock"
        server = try ControlServer(path: path)
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Lets the server answer whatever has arrived (a few rounds: accept, read, write).
    /// A client that sends `request` and closes its socket before any answer.
    func sendAndHangUp(_ request: String) throws {
        let gone = try UnixSocket.connect(to: path, timeoutMilliseconds: 2000)
        pump()
        try gone.writeAll(Array(request.utf8))
        pump()
    }

    func pump() {
        for _ in 0 ..< 4 { server.serve(target) }
    }

    /// Sends `request` (whole, or one byte per server round), closes the sending side and returns every byte answered.
    func exchange(_ request: [UInt8], byteByByte: Bool = false) throws -> [UInt8] {
        let client = try UnixSocket.connect(to: path, timeoutMilliseconds: 2000)
        pump()
        if byteByByte {
            for byte in request {
                try client.writeAll([byte])
                pump()
            }
        } else {
            try client.writeAll(request)
        }
        pump()
        client.shutdownWrite()
        pump()
        return try client.readToEnd(limit: 1 << 22)
    }

    func exchange(_ request: String, byteByByte: Bool = false) throws -> [Reply] {
        try Reply.split(try exchange(Array(request.utf8), byteByByte: byteByByte))
    }
}

/// One HTTP response taken apart, its body checked by Foundation's own JSON parser too.
struct Reply: CustomStringConvertible {
    var head: HTTPResponseHead
    var body: [UInt8]

    var status: Int { head.status }
    var json: JSONValue { (try? JSONValue.parse(body)) ?? .null }
    var description: String { "\(head.status) \(String(decoding: body, as: UTF8.self))" }

    static func split(_ bytes: [UInt8]) throws -> [Reply] {
        var parser = HTTPResponseParser()
        var replies: [Reply] = []
        var head: HTTPResponseHead?
        var body: [UInt8] = []
        try bytes.withUnsafeBytes { raw in
            var rest = raw[...]
            while let step = try parser.parse(UnsafeRawBufferPointer(rebasing: rest)) {
                switch step {
                case let .head(h, _): head = h; body = []
                case let .body(n): body += rest.prefix(n)
                case let .end(n):
                    body += rest.prefix(n)
                    let reply = Reply(head: head!, body: body)
                    // Every body is a JSON document, as a JSON parser that is not ours agrees.
                    #expect((try? JSONSerialization.jsonObject(with: Data(body))) != nil, "\(reply)")
                    replies.append(reply)
                case .upgraded: Issue.record("upgraded?")
                }
                rest = rest.dropFirst(step.consumed)
            }
        }
        return replies
    }
}

@Suite(.serialized) struct ControlServerTests {
    @Test func listsFlows() throws {
        let f = try ControlFixture()
        let replies = try f.exchange("GET /flows HTTP/1.1\r\nHost: s\r\n\r\n")
        try #require(replies.count == 1)
        #expect(replies[0].status == 200)
        #expect(replies[0].head.headers["Content-Type"] == "application/json")
        let json = replies[0].json
        #expect(json["count"]?.intValue == 2)
        let first = try #require(json["flows"]?[0])
        #expect(first["id"]?.intValue == 17)
        #expect(first["transport"]?.stringValue == "TCP")
        #expect(first["app-address"]?.stringValue == "10.233.0.1")
        #expect(first["app-port"]?.intValue == 40000)
        #expect(first["destination-port"]?.intValue == 443)
        #expect(first["domain"]?.stringValue == "api.example.test")
        #expect(first["domain-source"]?.stringValue == "dns")
        #expect(first["rule"]?.stringValue == "p.conf:12: DOMAIN-SUFFIX,example.test,Proxies")
        #expect(first["policy"]?.stringValue == "Proxies → proxy-a")
        #expect(first["bytes-up"]?.intValue == 517)
        #expect(first["bytes-down"]?.intValue == 1_048_576)
        #expect(first["age-seconds"]?.doubleValue == 2.5)
        #expect(first["state"]?.stringValue == "ESTABLISHED")
        // What the tunnel does not know is null, not missing.
        #expect(json["flows"]?[1]?["domain"] == .null)
        // The client reads back exactly what the server wrote.
        #expect(ControlFlow(first) == f.target.openFlows[0])
    }

    @Test func closesFlows() throws {
        let f = try ControlFixture()
        var replies = try f.exchange("DELETE /flows/17 HTTP/1.1\r\nHost: s\r\n\r\nPOST /flows/18/close HTTP/1.1\r\nHost: s\r\nContent-Length: 0\r\n\r\n")
        #expect(replies.map(\.status) == [200, 200])
        #expect(f.target.closed == [17, 18])
        replies = try f.exchange("DELETE /flows/17 HTTP/1.1\r\nHost: s\r\n\r\nDELETE /flows/abc HTTP/1.1\r\nHost: s\r\n\r\n")
        #expect(replies.map(\.status) == [404, 400], "\(replies)")
        #expect(replies[0].json["error"]?.stringValue == "no open flow with id 17")
        #expect(f.target.closed == [17, 18])
    }

    @Test func recentRequests() throws {
        let f = try ControlFixture()
        var http = HTTPRequestRecord(connectionID: 17, requestIndex: 1, startTime: 1_765_084_323_123_456_000, method: "GET", url: "http://api.example.test/v1?q=1")
        http.status = 200
        http.rule = "p.conf:12: DOMAIN-SUFFIX,example.test"
        http.policy = "DIRECT"
        f.target.recent.append(.http(http))
        var connection = FlowRecord(connectionID: 18, startTime: 1_765_084_323_000_000_000, transport: .udp, source: .v4(IPv4Address(10, 233, 0, 1)),
                                    sourcePort: 5353, destination: .v4(IPv4Address(10, 88, 0, 2)), destinationPort: 53)
        connection.endTime = 1_765_084_324_000_000_000
        connection.status = .closed
        f.target.recent.append(.connection(connection))
        var replies = try f.exchange("GET /requests HTTP/1.1\r\nHost: s\r\n\r\nGET /requests?after=1&limit=5 HTTP/1.1\r\nHost: s\r\n\r\n")
        try #require(replies.count == 2)
        #expect(replies.map(\.status) == [200, 200])
        #expect(f.target.recentAsked.map(\.after) == [nil, 1])
        #expect(f.target.recentAsked.map(\.limit) == [ControlRouter.defaultRequestsLimit, 5])
        let all = replies[0].json
        #expect(all["newest"]?.intValue == 2 && all["missed"]?.intValue == 0 && all["more"]?.boolValue == false)
        #expect(all["requests"]?.arrayValue?.count == 2)
        // Which Sluice answered: the ring's own name, the same in every answer it gives.
        #expect(all["instance"]?.stringValue == f.target.recent.instance && f.target.recent.instance.count == 16)
        #expect(replies[1].json["instance"]?.stringValue == f.target.recent.instance)
        #expect(RecentRequests().instance != RecentRequests().instance)
        // Each entry's line is the flow log's, byte for byte.
        let first = try #require(all["requests"]?[0])
        #expect(first["id"]?.intValue == 1)
        #expect(first["line"] == (try JSONValue.parse(http.json)))
        #expect(all["requests"]?[1]?["line"] == (try JSONValue.parse(connection.json)))
        #expect(replies[1].json["requests"]?.arrayValue?.map { $0["id"]?.intValue } == [2])
        // The readable line.
        #expect(ControlFormat.request(first) == "05:12:03.123  #17.1 GET http://api.example.test/v1?q=1  200  -  0 B  DIRECT  (p.conf:12: DOMAIN-SUFFIX,example.test)")
        #expect(ControlFormat.request(all["requests"]![1]!) == "05:12:03.000  #18 UDP 10.233.0.1.5353 > 10.88.0.2.53  closed  1000 ms  0 B up, 0 B down  -")

        replies = try f.exchange("GET /requests?limit=0 HTTP/1.1\r\nHost: s\r\n\r\nGET /requests?limit=513 HTTP/1.1\r\nHost: s\r\n\r\n"
            + "GET /requests?after=x HTTP/1.1\r\nHost: s\r\n\r\nGET /requests?since=3 HTTP/1.1\r\nHost: s\r\n\r\n"
            + "GET /requests?limit=2&limit=3 HTTP/1.1\r\nHost: s\r\n\r\nDELETE /requests HTTP/1.1\r\nHost: s\r\n\r\n"
            + "DELETE /requests?since=3 HTTP/1.1\r\nHost: s\r\n\r\n")
        // The method is judged first, as on every path: a DELETE with a bad query is a 405.
        #expect(replies.map(\.status) == [400, 400, 400, 400, 400, 405, 405], "\(replies)")
        #expect(replies[6].head.headers["Allow"] == "GET")
        #expect(replies[3].json["error"]?.stringValue == "/requests takes after=ID, limit=N and wait=MS; got 'since'")
        #expect(f.target.recentAsked.count == 2)
    }

    @Test func statistics() throws {
        let f = try ControlFixture()
        let replies = try f.exchange("GET /stats HTTP/1.1\r\nHost: s\r\n\r\n")
        try #require(replies.count == 1)
        #expect(replies[0].status == 200)
        #expect(replies[0].json["tunnel"]?["tcp-flows"]?.intValue == 3)
        #expect(replies[0].json["tunnel"]?["bytes-to-app"]?.intValue == 2048)
        #expect(replies[0].json["statistics"] == .array([]))
    }

    @Test func groupsAndSelection() throws {
        let f = try ControlFixture()
        var replies = try f.exchange("GET /groups HTTP/1.1\r\nHost: s\r\n\r\n")
        #expect(replies.first?.status == 200)
        let groups = replies.first?.json["groups"]?.arrayValue ?? []
        #expect(groups.compactMap(ControlGroup.init) == f.target.groups())
        #expect(groups.first?["selected"]?.stringValue == "proxy-a")
        #expect(groups.last?["members"]?[0]?["latency-ms"]?.intValue == 12)

        let body = #"{"selected": "proxy-b"}"#
        replies = try f.exchange("PUT /groups/Proxies HTTP/1.1\r\nHost: s\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(replies.map(\.status) == [200], "\(replies)")
        #expect(f.target.selections["Proxies"] == "proxy-b")
        #expect(replies.first?.json["ok"] == .bool(true))

        // A fallback group: 409; no such group or member: 404; a body that is not the object asked for: 400.
        for (path, body, status) in [("Auto", #"{"selected":"proxy-a"}"#, 409), ("Nope", #"{"selected":"proxy-a"}"#, 404),
                                     ("Proxies", #"{"selected":"proxy-z"}"#, 404), ("Proxies", #"{"selected":1}"#, 400),
                                     ("Proxies", #"{"selected":"#, 400), ("Proxies", "", 400)] {
            let r = try f.exchange("PUT /groups/\(path) HTTP/1.1\r\nHost: s\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            #expect(r.map(\.status) == [status], "\(path) \(body): \(r)")
            #expect(r.first?.json["ok"] == .bool(false))
        }
        #expect(f.target.selections["Proxies"] == "proxy-b")
    }

    @Test func groupNamesArePercentDecoded() throws {
        let f = try ControlFixture()
        let body = #"{"selected":"proxy-a"}"#
        let r = try f.exchange("PUT /groups/My%20Group HTTP/1.1\r\nHost: s\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(r.first?.json["error"]?.stringValue == "no group My Group")
        #expect(ControlCommand.percentEncoded("My Group/ü") == "My%20Group%2F%C3%BC")
        let bad = try f.exchange("PUT /groups/%zz HTTP/1.1\r\nHost: s\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(bad.map(\.status) == [400])
    }

    @Test func reload() throws {
        let f = try ControlFixture()
        var r = try f.exchange("POST /reload HTTP/1.1\r\nHost: s\r\nContent-Length: 0\r\n\r\n")
        #expect(r.map(\.status) == [200])
        #expect(r.first?.json["message"]?.stringValue == "reloaded p.conf")
        f.target.reloadErrors = ["p.conf:3: error: unknown policy 'Nope'", "p.conf:9: error: bad CIDR"]
        r = try f.exchange("POST /reload HTTP/1.1\r\nHost: s\r\nContent-Length: 0\r\n\r\n")
        #expect(r.map(\.status) == [422])
        #expect(r.first?.json["errors"]?.arrayValue?.compactMap(\.stringValue) == f.target.reloadErrors)
        #expect(f.target.reloads == 2)
    }

    /// Bytes the server has written to `client` so far, without waiting.
    func answered(_ client: borrowing UnixSocket) -> [UInt8] {
        var bytes: [UInt8] = []
        var entry = pollfd(fd: client.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while poll(&entry, 1, 0) == 1, entry.revents & Int16(POLLIN) != 0 {
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(client.descriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard n > 0 else { break }
            bytes += buffer[0 ..< n]
        }
        return bytes
    }

    @Test func aReloadReadOnAWorkerIsAnsweredWhenItIsDoneAndInOrder() throws {
        let f = try ControlFixture()
        f.target.reloadsTakeTime = true
        // A reload, then a request pipelined behind it.
        let waiting = try UnixSocket.connect(to: f.path, timeoutMilliseconds: 2000)
        f.pump()
        try waiting.writeAll(Array("POST /reload HTTP/1.1\r\nHost: s\r\nContent-Length: 0\r\n\r\nGET /groups HTTP/1.1\r\nHost: s\r\n\r\n".utf8))
        f.pump()
        #expect(f.target.reloads == 1)
        #expect(answered(waiting).isEmpty, "nothing is answered before the read is done, not even what came after it")
        // Another client is served meanwhile.
        #expect(try f.exchange("GET /flows HTTP/1.1\r\nHost: s\r\n\r\n").map(\.status) == [200])
        // A client that asks while read 1 runs waits for read 2; one that hangs up while waiting is dropped.
        f.target.readNumber = 2
        let later = try UnixSocket.connect(to: f.path, timeoutMilliseconds: 2000)
        f.pump()
        try later.writeAll(Array("POST /reload HTTP/1.1\r\nHost: s\r\nContent-Length: 0\r\n\r\n".utf8))
        later.shutdownWrite()
        try f.sendAndHangUp("POST /reload HTTP/1.1\r\nHost: s\r\nContent-Length: 0\r\n\r\n")
        f.pump()
        #expect(f.server.connections.count == 2, "the client that hung up is dropped, the half-closed one kept")
        f.server.finishReloads(generation: 1, .success("reloaded p.conf"), target: f.target)
        f.pump()
        let first = try Reply.split(answered(waiting))
        #expect(first.map(\.status) == [200, 200])
        #expect(first.first?.json["message"]?.stringValue == "reloaded p.conf")
        #expect(first.last?.json["groups"]?.arrayValue?.count == 2)
        #expect(answered(later).isEmpty, "asked during read 1: read 2 answers it")
        f.server.finishReloads(generation: 2, .failure(ControlFailure(kind: .invalid, message: "p.conf has errors", errors: ["p.conf:3: error: x"])),
                               target: f.target)
        f.pump()
        let second = try Reply.split(try later.readToEnd(limit: 1 << 20))
        #expect(second.map(\.status) == [422])
        #expect(second.first?.json["errors"]?.arrayValue?.compactMap(\.stringValue) == ["p.conf:3: error: x"])
        #expect(f.server.connections.count == 1, "the half-closed client is done once answered")
    }

    /// `/requests?after=ID&wait=MS`: nothing after the id yet, so the answer
    /// waits (and what the client pipelined behind it) until a request
    /// finishes, found by the server's tick, or until the wait is over.
    @Test func aRequestWaitIsAnsweredWhenARequestFinishesOrItsWaitIsOver() throws {
        let f = try ControlFixture()
        func record(_ index: Int) -> RecentRequests.Entry {
            .http(HTTPRequestRecord(connectionID: 5, requestIndex: index, startTime: 1_765_084_323_000_000_000, method: "GET", url: "http://a.test/\(index)"))
        }
        f.target.recent.append(record(0))
        let waiting = try UnixSocket.connect(to: f.path, timeoutMilliseconds: 2000)
        f.pump()
        try waiting.writeAll(Array("GET /requests?after=1&wait=60000 HTTP/1.1\r\nHost: s\r\n\r\nGET /flows HTTP/1.1\r\nHost: s\r\n\r\n".utf8))
        f.pump()
        #expect(answered(waiting).isEmpty, "nothing after id 1 yet, and nothing behind the wait is answered first")
        #expect(f.server.ticking)
        // Another client is served meanwhile.
        #expect(try f.exchange("GET /flows HTTP/1.1\r\nHost: s\r\n\r\n").map(\.status) == [200])
        f.target.recent.append(record(1))
        // The tick (20 ms) finds it: polled, bounded.
        var bytes: [UInt8] = []
        for _ in 0 ..< 400 where bytes.count < 2 || (try? Reply.split(bytes).count) != 2 {
            f.pump()
            bytes += answered(waiting)
            if bytes.isEmpty { usleep(5000) }
        }
        let replies = try Reply.split(bytes)
        #expect(replies.map(\.status) == [200, 200], "\(replies)")
        #expect(replies.first?.json["requests"]?.arrayValue?.map { $0["id"]?.intValue } == [2])
        #expect(replies.last?.json["count"]?.intValue == 2)
        f.pump()
        #expect(!f.server.ticking, "no tick while nobody waits")

        // A short wait that nothing answers ends empty, when it is over.
        let started = MonotonicClock.now()
        let short = try UnixSocket.connect(to: f.path, timeoutMilliseconds: 2000)
        f.pump()
        try short.writeAll(Array("GET /requests?after=2&wait=60 HTTP/1.1\r\nHost: s\r\n\r\n".utf8))
        bytes = []
        for _ in 0 ..< 400 where bytes.isEmpty {
            f.pump()
            bytes = answered(short)
            if bytes.isEmpty { usleep(5000) }
        }
        #expect(MonotonicClock.now() - started >= 60_000_000)
        let empty = try Reply.split(bytes)
        #expect(empty.map(\.status) == [200])
        #expect(empty.first?.json["requests"]?.arrayValue?.isEmpty == true && empty.first?.json["newest"]?.intValue == 2)

        // Answered at once: something is there already, or the id is beyond the newest (another Sluice's).
        let now = try f.exchange("GET /requests?after=1&wait=60000 HTTP/1.1\r\nHost: s\r\n\r\nGET /requests?after=9&wait=60000 HTTP/1.1\r\nHost: s\r\n\r\n")
        #expect(now.map { $0.json["requests"]?.arrayValue?.count } == [1, 0], "\(now)")

        // A waiting client that hangs up is dropped.
        try f.sendAndHangUp("GET /requests?after=2&wait=60000 HTTP/1.1\r\nHost: s\r\n\r\n")
        f.pump()
        #expect(f.server.connections.count == 2, "the client that hung up is dropped, the two kept alive stay")
        #expect(!f.server.ticking)

        let refused = try f.exchange("GET /requests?after=1&wait=x HTTP/1.1\r\nHost: s\r\n\r\nGET /requests?after=1&wait=60001 HTTP/1.1\r\nHost: s\r\n\r\n"
            + "GET /requests?wait=10 HTTP/1.1\r\nHost: s\r\n\r\nGET /requests?after=1&wait=1&wait=2 HTTP/1.1\r\nHost: s\r\n\r\n")
        #expect(refused.map(\.status) == [400, 400, 400, 400], "\(refused)")
        #expect(refused.map { $0.json["error"]?.stringValue ?? "" } == [
            "wait= wants milliseconds from 0 to 60000; got 'x'", "wait= wants milliseconds from 0 to 60000; got '60001'",
            "wait= waits for requests after an id: give after=ID too", "wait= is given twice"])
    }

    @Test func wholeByteByByteAndPipelinedGiveTheSameAnswers() throws {
        let requests = [
            "GET /flows HTTP/1.1\r\nHost: s\r\n\r\n",
            "GET /stats?verbose=1 HTTP/1.1\r\nHost: s\r\n\r\n",
            "GET /groups HTTP/1.1\r\nHost: s\r\n\r\n",
            "POST /reload HTTP/1.1\r\nHost: s\r\nContent-Length: 2\r\n\r\n{}",
        ]
        var whole: [String] = []
        for request in requests {
            let f = try ControlFixture()
            whole += try f.exchange(request).map(\.description)
        }
        var byteByByte: [String] = []
        for request in requests {
            let f = try ControlFixture()
            byteByByte += try f.exchange(request, byteByByte: true).map(\.description)
        }
        let f = try ControlFixture()
        let pipelined = try f.exchange(requests.joined()).map(\.description)
        #expect(whole.count == 4)
        // uptime and flows do not change in the fake: every way of sending gives the same answers.
        #expect(byteByByte == whole)
        #expect(pipelined == whole)
        #expect(f.target.reloads == 1)
    }

    @Test func errors() throws {
        let f = try ControlFixture()
        // Unknown path: 404, and the connection goes on.
        var r = try f.exchange("GET /nothing HTTP/1.1\r\nHost: s\r\n\r\nGET /flows/1/2/3 HTTP/1.1\r\nHost: s\r\n\r\nGET /flows HTTP/1.1\r\nHost: s\r\n\r\n")
        #expect(r.map(\.status) == [404, 404, 200])
        // Wrong method: 405 with Allow.
        r = try f.exchange("POST /flows HTTP/1.1\r\nHost: s\r\nContent-Length: 0\r\n\r\nGET /reload HTTP/1.1\r\nHost: s\r\n\r\nGET /flows/17 HTTP/1.1\r\nHost: s\r\n\r\nPUT /stats HTTP/1.1\r\nHost: s\r\nContent-Length: 0\r\n\r\n")
        #expect(r.map(\.status) == [405, 405, 405, 405])
        #expect(r.map { $0.head.headers["Allow"] } == ["GET", "POST", "DELETE", "GET"])
        #expect(f.target.closed.isEmpty)
        // Not HTTP: 400, and the connection closes (what followed is not answered).
        r = try f.exchange("HELLO\r\n\r\nGET /flows HTTP/1.1\r\nHost: s\r\n\r\n")
        #expect(r.map(\.status) == [400])
        #expect(r.first?.head.headers["Connection"] == "close")
        r = try f.exchange("GET flows HTTP/1.1\r\nHost: s\r\n\r\n")
        #expect(r.map(\.status) == [400])
        // A body too big for the API, or with no length: refused before it is read.
        r = try f.exchange("PUT /groups/Proxies HTTP/1.1\r\nHost: s\r\nContent-Length: 1000000\r\n\r\n")
        #expect(r.map(\.status) == [413])
        r = try f.exchange("PUT /groups/Proxies HTTP/1.1\r\nHost: s\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        #expect(r.map(\.status) == [411])
        // A head beyond the limits.
        r = try f.exchange("GET /flows HTTP/1.1\r\nHost: s\r\nX: \(String(repeating: "a", count: 20000))\r\n\r\n")
        #expect(r.map(\.status) == [400])
        // Connection: close is honoured: the second request is not answered.
        r = try f.exchange("GET /flows HTTP/1.1\r\nHost: s\r\nConnection: close\r\n\r\nGET /flows HTTP/1.1\r\nHost: s\r\n\r\n")
        #expect(r.map(\.status) == [200])
        // A request cut short gets no answer, and the server goes on.
        r = try f.exchange("GET /flo")
        #expect(r.isEmpty)
        #expect(try f.exchange("GET /stats HTTP/1.1\r\nHost: s\r\n\r\n").map(\.status) == [200])
        #expect(f.server.connections.isEmpty, "finished clients are dropped")
    }

    @Test func manyClientsAtOnceAreBounded() throws {
        let f = try ControlFixture()
        final class Client {
            let socket: UnixSocket
            init(_ socket: consuming UnixSocket) { self.socket = socket }
        }
        var clients: [Client] = []
        for _ in 0 ..< ControlServer.maximumConnections + 8 {
            clients.append(Client(try UnixSocket.connect(to: f.path)))
            f.pump()
        }
        #expect(f.server.connections.count == ControlServer.maximumConnections)
        // The newest client is served.
        try clients[clients.count - 1].socket.writeAll(Array("GET /stats HTTP/1.1\r\nHost: s\r\nConnection: close\r\n\r\n".utf8))
        f.pump()
        let answer = try clients[clients.count - 1].socket.readToEnd(limit: 1 << 20)
        #expect(try Reply.split(answer).map(\.status) == [200])
    }

    @Test func socketFile() throws {
        let f = try ControlFixture()
        var info = stat()
        #expect(lstat(f.path, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_mode & 0o777 == 0o600, "root's only")
        #expect(info.st_uid == geteuid())
        // No temporary name left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.directory) == ["control.sock"])
        // A live server's path is not taken over.
        #expect(throws: Errno.addressInUse) { _ = try ControlServer(path: f.path) }
        #expect(UnixSocket.state(of: f.path) == .inUse)
        // Stopping removes the file.
        f.server.stop()
        #expect(!FileManager.default.fileExists(atPath: f.path))
    }

    @Test func staleSocketsAreReplacedAndOtherFilesKept() throws {
        let directory = "/tmp/sluice-control-\(getpid())-stale"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/c.sock"
        do {
            // A server that went away without removing its socket (its file stays: stop() is not called).
            let old = try UnixSocket.listen(at: path)
            _ = old
        }
        // A process another test is spawning at this moment holds a copy of
        // every descriptor until it execs (close-on-exec): the closed listener
        // may answer for those microseconds. Stale it must become, soon.
        var state = UnixSocket.state(of: path)
        for _ in 0 ..< 100 where state != .stale {
            usleep(10_000)
            state = UnixSocket.state(of: path)
        }
        #expect(state == .stale)
        let server = try ControlServer(path: path)
        #expect(UnixSocket.state(of: path) == .inUse)
        server.stop()

        let file = directory + "/not-a-socket"
        try "keep me".write(toFile: file, atomically: false, encoding: .utf8)
        #expect(throws: Errno.fileExists) { _ = try ControlServer(path: file) }
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "keep me")
        #expect(throws: Errno.nameTooLong) { _ = try ControlServer(path: directory + "/" + String(repeating: "x", count: 120)) }
    }

    @Test func clientMessages() throws {
        let missing = ControlClient(path: "/tmp/sluice-control-\(getpid())-missing/c.sock")
        #expect(throws: ControlClient.Failure.self) { _ = try missing.request("GET", "/stats") }
        do {
            _ = try missing.request("GET", "/stats")
        } catch {
            #expect(error.description.contains("no control socket at"))
            #expect(error.description.contains("is Sluice running"))
        }
        #expect(ControlClient.explainConnect(.permissionDenied, path: "/run/sluice/control.sock")
            == "sluice: permission denied on the control socket /run/sluice/control.sock (EACCES): it is root's only (mode 0600); run this as root, for example with sudo")
    }
}

@Suite struct ControlCommandTests {
    /// A follower starts again (from the new Sluice's first line) when
    /// another Sluice answers on its socket, even one that has already
    /// made more lines than the followed one had.
    @Test func aFollowerKnowsAnotherSluiceByItsInstance() {
        #expect(!ControlCommand.isAnotherSluice(answering: "a1", followed: "a1", newest: 40, after: 40))
        #expect(!ControlCommand.isAnotherSluice(answering: "a1", followed: "a1", newest: 90, after: 40))
        #expect(ControlCommand.isAnotherSluice(answering: "b2", followed: "a1", newest: 90, after: 40))
        #expect(ControlCommand.isAnotherSluice(answering: "b2", followed: "a1", newest: 3, after: 40))
        // A Sluice that names no instance: only a newest id below the last one seen tells.
        #expect(ControlCommand.isAnotherSluice(answering: nil, followed: nil, newest: 3, after: 40))
        #expect(!ControlCommand.isAnotherSluice(answering: nil, followed: nil, newest: 90, after: 40))
    }

    @Test func parses() throws {
        #expect(try ControlCommand.parse(["status"]).get() == ControlCommand.Options(action: .status))
        var flows = ControlCommand.Options(action: .flows)
        flows.path = "/tmp/c.sock"
        flows.json = true
        #expect(try ControlCommand.parse(["flows", "--control", "/tmp/c.sock", "--json"]).get() == flows)
        #expect(try ControlCommand.parse(["close", "17"]).get().action == .close(17))
        #expect(try ControlCommand.parse(["select", "Proxies", "proxy-b"]).get().action == .select(group: "Proxies", member: "proxy-b"))
        #expect(try ControlCommand.parse(["top", "--interval", "0.5", "--count", "3"]).get().action == .top(interval: 0.5, count: 3))
        #expect(try ControlCommand.parse(["requests"]).get().action == .requests(last: 20, follow: false, count: nil, httpOnly: false))
        #expect(try ControlCommand.parse(["requests", "--follow", "--count", "3", "--last", "0", "--http"]).get().action
            == .requests(last: 0, follow: true, count: 3, httpOnly: true))
        #expect(try ControlCommand.parse(["requests", "-f"]).get().action == .requests(last: 20, follow: true, count: nil, httpOnly: false))
        guard case let .failure(countAlone) = ControlCommand.parse(["requests", "--count", "3"]) else { Issue.record("--count without --follow"); return }
        #expect(countAlone.description.contains("--last N"))
        for bad: [String] in [["close"], ["close", "x"], ["select", "G"], ["status", "extra"], ["flows", "--control"],
                              ["status", "--frobnicate"], ["top", "--interval", "0"], ["flows", "--interval", "1"],
                              ["requests", "--last", "513"], ["requests", "--last", "-1"], ["flows", "--follow"], ["requests", "x"]] {
            guard case .failure = ControlCommand.parse(bad[...]) else { Issue.record("accepted \(bad)"); continue }
        }
        guard case let .failure(two) = ControlCommand.parse(["close", "1", "2"]) else { Issue.record("accepted two ids"); return }
        #expect(two.description == "sluice close: one flow at a time; got 2 ids (1 2)")
    }

    @Test func formatsTheFlowTable() throws {
        let target = FakeControlTarget()
        let response = ControlRouter.flows(target)
        let lines = ControlFormat.flows(try JSONValue.parse(response.json))
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("ID  PROTO  APP "))
        #expect(lines[1].contains("17  TCP    10.233.0.1.40000"))
        #expect(lines[1].contains("api.example.test (dns)"))
        #expect(lines[1].contains("Proxies → proxy-a"))
        #expect(lines[1].contains("517 B"))
        #expect(lines[1].contains("1.0 MiB"))
        #expect(lines[1].hasSuffix("ESTABLISHED"))
        #expect(lines[2].contains("18  UDP"))
        #expect(lines[3] == "2 open flows")
    }

    /// Flows whose owner was looked up (an owner rule is loaded) get a PROCESS column.
    @Test func aProcessColumnWhenOwnersAreKnown() throws {
        let target = FakeControlTarget()
        var flow = ControlFlow(id: 5, transport: "TCP", appAddress: "10.233.0.1", appPort: 40000,
                               destinationAddress: "10.88.0.2", destinationPort: 80, state: "ESTABLISHED")
        flow.process = "curl[4242]"
        target.openFlows = [flow]
        let parsed = try JSONValue.parse(ControlRouter.flows(target).json)
        #expect(ControlFlow(try #require(parsed["flows"]?.arrayValue?.first)) == flow)
        let lines = ControlFormat.flows(parsed)
        #expect(lines[0].hasPrefix("ID  PROTO  APP               PROCESS     DESTINATION"), "\(lines)")
        #expect(lines[1].hasPrefix("5   TCP    10.233.0.1.40000  curl[4242]  10.88.0.2.80"), "\(lines)")
    }

    /// A proxy's connection before its client named a target: no destination, written null, shown as "-".
    @Test func aFlowWithoutADestination() throws {
        let target = FakeControlTarget()
        target.openFlows = [ControlFlow(id: 3, transport: "TCP", appAddress: "127.0.0.1", appPort: 41000,
                                        destinationAddress: nil, destinationPort: nil, state: "handshake")]
        let response = ControlRouter.flows(target)
        let parsed = try JSONValue.parse(response.json)
        let flow = try #require(parsed["flows"]?.arrayValue?.first)
        #expect(flow["destination-address"] == .null && flow["destination-port"] == .null)
        #expect(ControlFlow(flow) == target.openFlows[0])
        let lines = ControlFormat.flows(parsed)
        #expect(lines[1].hasPrefix("3   TCP    127.0.0.1.41000  -  "), "\(lines)")
        #expect(lines[1].hasSuffix("handshake"))
    }

    /// `sluice proxy`'s statistics (a "proxy" object instead of "tunnel"), as `sluice status` prints them.
    @Test func formatsAProxysStatus() throws {
        let text = """
        {"uptime-seconds": 3.2, "listeners": {"socks5": "127.0.0.1:1080", "http": null},
         "open": {"connections": 5, "handshake": 1, "idle": 1, "sniffing": 1, "resolving": 0, "connecting": 1, "proxy-handshake": 0,
                  "relaying": 1, "associated": 0, "closing": 0},
         "proxy": {"connections": 9, "relayed": 6, "refused-by-rules": 1, "answered-here": 2, "handshake-failures": 1,
                   "auth-failures": 1, "failed": 1, "errors": 0, "bytes-up": 2048, "bytes-down": 3145728,
                   "associations": 1, "datagrams-up": 5, "datagrams-down": 4, "datagrams-dropped": 0},
         "profile": "/etc/sluice/p.conf",
         "statistics": [{"name": "api", "keys": []}]}
        """
        let lines = ControlFormat.status(try JSONValue.parse(Array(text.utf8)))
        #expect(lines == [
            "Sluice proxy: up 3s, profile /etc/sluice/p.conf",
            "listening: SOCKS5 on 127.0.0.1:1080",
            "open: 5 connections (1 relaying, 1 idle between requests, 1 in handshake, 2 connecting, 0 UDP associations, 0 closing)",
            "traffic: 2.0 KiB up, 3.0 MiB down",
            "since start: 9 connections (6 relayed, 1 refused by rules, 2 requests answered by the profile), 1 UDP associations (5 datagrams up, 4 down)",
            "problems: 1 bad or unauthenticated requests (1 wrong credentials), 1 unreachable, 0 errors, 0 datagrams dropped",
            "statistics api:",
            "  (no requests yet)",
        ])
    }

    @Test func formatsTheStatus() throws {
        let target = FakeControlTarget()
        var json = JSONWriter()
        target.writeStatistics(into: &json)
        let lines = ControlFormat.status(try JSONValue.parse(json.bytes))
        #expect(lines[0] == "Sluice: up 1m1s, profile the built-in default (everything DIRECT)")
        #expect(lines[1] == "open: 2 TCP flows relayed upstream, 4 being sniffed, 5 HTTP sessions, 1 UDP sessions")
        #expect(lines.contains { $0.hasPrefix("traffic: 0 B up, 2.0 KiB down") })
        #expect(lines.contains { $0.hasPrefix("since start: 3 TCP flows") })
        var groups = JSONWriter()
        groups.beginObject(); groups.key("groups"); groups.beginArray()
        for group in target.groups() { group.write(into: &groups) }
        groups.endArray(); groups.endObject()
        #expect(ControlFormat.groups(try JSONValue.parse(groups.bytes)) == [
            "groups:", "  Proxies (select): *proxy-a, proxy-b", "  Auto (fallback): *proxy-a (up)",
        ])
    }
}
