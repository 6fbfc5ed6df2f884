import Foundation
import Testing
import Sys
import TestSupport

/// `sluice replay` reproduces the live session's decisions. One session of
/// curl requests runs through `sluice exec --profile P --pcap X --flow-log L`,
/// while tcpdump records the server's side of the same session; then both
/// captures are replayed with the same profile.
///
/// The comparison: the live flow log has one `http` line per request the
/// engine planned, written from the very `HTTPExchange` that drove the relay
/// (rule with file and line, policy). `sluice replay --format flowlog` writes
/// the same kind of line, so each side reduces to the multiset of
/// `METHOD URL | RULE | POLICY`. Sluice's own capture sees every request and
/// must give exactly the live set; the server's capture sees only the
/// forwarded ones (policy DIRECT here) and must give exactly those. Times,
/// ports and ids are left out: they differ by nature. A request decided by
/// another line, or answered where live forwarded, shows up as a difference.
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces and TUN devices"), .serialized)
final class ReplayTests {
    let pair: ServerPair
    var work: URL { pair.work }

    init() throws {
        pair = try ServerPair("replay")
        try FileManager.default.createDirectory(at: work.appendingPathComponent("api"), withIntermediateDirectories: true)
        try "hello from nginx\n".write(to: work.appendingPathComponent("hello.txt"), atomically: true, encoding: .utf8)
        try "api hello\n".write(to: work.appendingPathComponent("api/hello.txt"), atomically: true, encoding: .utf8)
    }

    static let profileText = """
    [Rule]
    URL-REGEX,"^http://origin\\.test:8080/api/",DIRECT
    DOMAIN,blocked.test,REJECT
    DOMAIN,origin.test,DIRECT
    DOMAIN-SUFFIX,ads.test,REJECT
    DEST-PORT,9999,REJECT
    FINAL,DIRECT

    [Host]
    origin.test = 10.88.0.2
    blocked.test = 10.88.0.2
    other.test = 10.88.0.2

    [Header Rewrite]
    http-request ^http://origin\\.test:8080/ header-add X-Env staging

    [Map Local]
    ^http://origin\\.test:8080/mock$ data-type=text data="mocked" status-code=200
    """

    /// `METHOD URL | RULE | POLICY` from a flow log's `http` lines (live or replayed).
    static func decisions(_ stdout: String) throws -> [String] {
        var out: [String] = []
        for line in stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard object["kind"] as? String == "http" else { continue }
            let method = object["method"] as? String ?? "?", url = object["url"] as? String ?? "?"
            out.append("\(method) \(url) | \(object["rule"] as? String ?? "-") | \(object["policy"] as? String ?? "-")")
        }
        return out.sorted()
    }

    /// `TRANSPORT PORT | RULE TYPE | POLICY | STATUS` from a flow log's UDP and ICMP
    /// `connection` lines (the DNS queries Sluice answers have none, live or replayed).
    static func datagramFlows(_ stdout: String) throws -> [String] {
        var out: [String] = []
        for line in stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard object["kind"] as? String == "connection", let transport = object["transport"] as? String, transport != "tcp" else { continue }
            let port = object["destinationPort"] as? Int ?? -1
            let rule = (object["rule"] as? String).map { $0.contains("FINAL") ? "FINAL" : $0.contains("DEST-PORT") ? "DEST-PORT" : $0 } ?? "-"
            out.append("\(transport) \(port) | \(rule) | \(object["policy"] as? String ?? "-") | \(object["status"] as? String ?? "-")")
        }
        return out.sorted()
    }

    /// tcpdump in the server namespace on `interface`, writing `file`; returns once it listens.
    func startTcpdump(_ interface: String, _ file: String) throws -> ChildProcess {
        let log = work.appendingPathComponent("tcpdump-\(interface)-\(UUID().uuidString).log").path
        let child = try pair.net.start(["tcpdump", "-i", interface, "-n", "-U", "--immediate-mode", "-s", "0", "-w", file, "tcp", "port", "8080"],
                                       in: pair.server, log: log)
        let listening = TestNetwork.waitUntil(seconds: 10) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("listening on")
        }
        try #require(listening, "tcpdump did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        return child
    }

    /// Stops tcpdump by its PID once its file has stopped growing (it writes each packet as it comes).
    func stopTcpdump(_ child: ChildProcess, _ file: String) {
        var lastSize = -1
        _ = TestNetwork.waitUntil(seconds: 5) {
            usleep(200_000)
            let size = ((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int) ?? 0
            defer { lastSize = size }
            return size > 24 && size == lastSize
        }
        child.signal(SIGINT)
        _ = TestNetwork.waitUntil(seconds: 10) { (try? child.poll()) != nil }
    }

    @Test func replayingBothCapturesReproducesTheLiveDecisions() throws {
        let profile = work.appendingPathComponent("replay.conf").path
        try Self.profileText.write(toFile: profile, atomically: true, encoding: .utf8)
        let sluicePcap = work.appendingPathComponent("sluice.pcap").path
        let serverPcap = work.appendingPathComponent("server.pcap").path

        // tcpdump on the server's veth (Ethernet) and on `any` (Linux cooked), ready before the session starts.
        let serverAnyPcap = work.appendingPathComponent("server-any.pcap").path
        let tcpdumps = [(try startTcpdump("s0", serverPcap), serverPcap), (try startTcpdump("any", serverAnyPcap), serverAnyPcap)]
        let script = """
        curl -s --max-time 10 -o /dev/null -w '%{http_code}\\n' http://origin.test:8080/hello.txt
        curl -s --max-time 10 -o /dev/null -w '%{http_code}\\n' http://origin.test:8080/api/hello.txt
        curl -s --max-time 10 -w ' %{http_code}\\n' http://origin.test:8080/mock
        curl -s --max-time 10 -o /dev/null -w '%{http_code}\\n' http://blocked.test:8080/hello.txt
        curl -s --max-time 10 -o /dev/null -w '%{http_code}\\n' http://other.test:8080/hello.txt
        curl -s --max-time 10 -o /dev/null -w '%{http_code}\\n' http://banner.ads.test/pixel
        echo dropped > /dev/udp/10.88.0.2/9999
        echo sent > /dev/udp/10.88.0.2/9998
        ping -c 1 -W 2 10.88.0.2 > /dev/null
        ip=$(dig +tcp +short +time=2 +tries=1 @10.233.0.53 tcp.ads.test A | head -1)
        (exec 3<>/dev/tcp/$ip/9000) 2>/dev/null || true
        """
        let liveLog = work.appendingPathComponent("live.jsonl").path
        let live = try runSluice(["exec", "--profile", profile, "--pcap", sluicePcap, "--flow-log", liveLog, "--", "bash", "-c", script],
                                 in: pair.host, timeout: 60)
        for (child, file) in tcpdumps { stopTcpdump(child, file) }

        #expect(live.status == 0, "\(live.stderr)")
        #expect(live.stdout == "200\n200\nmocked 200\n403\n200\n403\n", "\(live.stdout)")
        let liveDecisions = try Self.decisions(String(contentsOfFile: liveLog, encoding: .utf8))
        // The session exercised what the comparison is about: a URL-REGEX line, a DOMAIN
        // REJECT, a DOMAIN and the FINAL line forwarding, and Map Local.
        #expect(liveDecisions.count == 6, "\(liveDecisions)\n\(live.stderr)")
        // banner.ads.test has no [Host] entry: the app got a fake IP, which only the DNS answer names.
        #expect(liveDecisions.contains { $0.hasPrefix("GET http://banner.ads.test/pixel | \(profile):5: DOMAIN-SUFFIX,ads.test,REJECT") }, "\(liveDecisions)")
        #expect(liveDecisions.contains { $0.contains("/api/hello.txt | \(profile):2: URL-REGEX") && $0.hasSuffix("| DIRECT") }, "\(liveDecisions)")
        #expect(liveDecisions.contains { $0.contains("blocked.test") && $0.contains(":3: DOMAIN,blocked.test,REJECT") && $0.hasSuffix("| REJECT") }, "\(liveDecisions)")
        #expect(liveDecisions.contains { $0.contains("/mock | \(profile):") && $0.contains("Map Local") && $0.hasSuffix("| local") }, "\(liveDecisions)")
        #expect(liveDecisions.contains { $0.contains("other.test") && $0.contains("FINAL") }, "\(liveDecisions)")

        // Sluice's own capture (LINKTYPE_RAW) holds every request, local answers too.
        let fromSluice = try runSluice(["replay", sluicePcap, "--profile", profile, "--format", "flowlog"])
        #expect(fromSluice.status == 0, "\(fromSluice.stderr)")
        #expect(try Self.decisions(fromSluice.stdout) == liveDecisions, "\(fromSluice.stdout)\n\(fromSluice.stderr)")
        #expect(fromSluice.stdout.contains(#""domain":"banner.ads.test","domainSource":"dns""#), "\(fromSluice.stdout)")
        // A local answer's body counts as live (replay said 0).
        func mockBody(_ log: String) throws -> Int? {
            for line in log.split(separator: "\n") {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                if (object["url"] as? String)?.hasSuffix("/mock") == true { return object["responseBodyBytes"] as? Int }
            }
            return nil
        }
        let liveMockBody = try mockBody(String(contentsOfFile: liveLog, encoding: .utf8))
        let replayedMockBody = try mockBody(fromSluice.stdout)
        #expect(liveMockBody == 6 && replayedMockBody == liveMockBody, "\(fromSluice.stdout)")

        // UDP sessions and the ping flow: the same rule, policy and outcome as live.
        let liveDatagrams = try Self.datagramFlows(String(contentsOfFile: liveLog, encoding: .utf8))
        #expect(liveDatagrams == ["icmp 0 | FINAL | DIRECT | open", "udp 9998 | FINAL | DIRECT | open", "udp 9999 | DEST-PORT | REJECT | blocked"]
                || liveDatagrams == ["icmp 0 | FINAL | DIRECT | closed", "udp 9998 | FINAL | DIRECT | closed", "udp 9999 | DEST-PORT | REJECT | blocked"],
                "\(liveDatagrams)")
        let replayedDatagrams = try Self.datagramFlows(fromSluice.stdout)
        #expect(replayedDatagrams.map { $0.split(separator: "|").prefix(3).joined(separator: "|") }
                == liveDatagrams.map { $0.split(separator: "|").prefix(3).joined(separator: "|") }, "\(replayedDatagrams)\n\(fromSluice.stdout)")
        #expect(fromSluice.stderr.contains(" UDP sessions, 1 ping flows"), "\(fromSluice.stderr)")

        // DNS over TCP: the name its answer gave the fake IP decides the later
        // connection as live, and the query itself, answered by Sluice, has no line.
        func connection(port: Int, in log: String) throws -> [String: Any]? {
            for line in log.split(separator: "\n") {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                if object["kind"] as? String == "connection", object["destinationPort"] as? Int == port { return object }
            }
            return nil
        }
        let liveTCP = try #require(try connection(port: 9000, in: String(contentsOfFile: liveLog, encoding: .utf8)), "\(live.stderr)")
        let replayedTCP = try #require(try connection(port: 9000, in: fromSluice.stdout), "\(fromSluice.stdout)")
        #expect(liveTCP["domain"] as? String == "tcp.ads.test" && liveTCP["domainSource"] as? String == "dns", "\(liveTCP)")
        for key in ["domain", "domainSource", "rule", "policy"] {
            #expect(replayedTCP[key] as? String == liveTCP[key] as? String, "\(key): \(replayedTCP) against \(liveTCP)")
        }
        #expect(try connection(port: 53, in: fromSluice.stdout) == nil, "\(fromSluice.stdout)")

        // tcpdump's capture of the server's side (Ethernet) holds the forwarded ones.
        let fromServer = try runSluice(["replay", serverPcap, "--profile", profile, "--format", "flowlog"])
        #expect(fromServer.status == 0, "\(fromServer.stderr)")
        let forwarded = liveDecisions.filter { $0.hasSuffix("| DIRECT") }
        #expect(forwarded.count == 3, "\(liveDecisions)")
        #expect(try Self.decisions(fromServer.stdout) == forwarded, "\(fromServer.stdout)\n\(fromServer.stderr)")
        let fromServerAny = try runSluice(["replay", serverAnyPcap, "--profile", profile, "--format", "flowlog"])
        #expect(fromServerAny.status == 0, "\(fromServerAny.stderr)")
        #expect(try Self.decisions(fromServerAny.stdout) == forwarded, "\(fromServerAny.stdout)\n\(fromServerAny.stderr)")

        // The header rewrite happened on the way: the server's capture shows the added
        // header on origin.test's requests, Sluice's (the app's side) does not.
        let serverHAR = try runSluice(["replay", serverPcap, "--profile", profile, "--format", "har"])
        let sluiceHAR = try runSluice(["replay", sluicePcap, "--profile", profile, "--format", "har"])
        func envHeaders(_ har: String) throws -> [String: [String]] {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(har.utf8)) as? [String: Any])
            let entries = try #require((object["log"] as? [String: Any])?["entries"] as? [[String: Any]])
            var result: [String: [String]] = [:]
            for entry in entries {
                let request = try #require(entry["request"] as? [String: Any])
                let url = request["url"] as? String ?? "?"
                let headers = request["headers"] as? [[String: Any]] ?? []
                result[url, default: []] += headers.filter { ($0["name"] as? String)?.lowercased() == "x-env" }.compactMap { $0["value"] as? String }
                #expect(entry["_rule"] is String && entry["_policy"] is String && entry["_mocked"] is Bool)
            }
            return result
        }
        let serverEnv = try envHeaders(serverHAR.stdout)
        let sluiceEnv = try envHeaders(sluiceHAR.stdout)
        #expect(serverEnv["http://origin.test:8080/hello.txt"] == ["staging"], "\(serverEnv)")
        #expect(serverEnv["http://other.test:8080/hello.txt"] == [], "\(serverEnv)")
        #expect(sluiceEnv["http://origin.test:8080/hello.txt"] == [], "\(sluiceEnv)")

        // The table names each action.
        let table = try runSluice(["replay", sluicePcap, "--profile", profile])
        #expect(table.status == 0)
        let rows = table.stdout.split(separator: "\n").map(String.init)
        #expect(rows.first?.hasPrefix("TIME") == true)
        #expect(rows.contains { $0.contains("GET http://origin.test:8080/mock 200") && $0.hasSuffix("mock 200") }, "\(table.stdout)")
        #expect(rows.contains { $0.contains("GET http://blocked.test:8080/hello.txt 403") && $0.hasSuffix("reject 403") }, "\(table.stdout)")
        #expect(rows.contains { $0.contains("GET http://other.test:8080/hello.txt 200") && $0.hasSuffix("forward") }, "\(table.stdout)")
    }

    /// A tcpdump capture of curl talking to nginx directly, over IPv6: three
    /// requests on one keep-alive connection, each decided on its own URL.
    @Test func keepAliveRequestsInATcpdumpCaptureAreEachDecided() throws {
        let profile = work.appendingPathComponent("replay.conf").path
        try Self.profileText.write(toFile: profile, atomically: true, encoding: .utf8)
        let pcap = work.appendingPathComponent("direct.pcap").path
        let tcpdump = try startTcpdump("s0", pcap)
        let curl = try pair.net.run(["curl", "-sS", "--max-time", "10", "-g", "-H", "Host: origin.test:8080",
                                     "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code}\\n",
                                     "http://[fd00:88::2]:8080/hello.txt", "http://[fd00:88::2]:8080/api/hello.txt",
                                     "http://[fd00:88::2]:8080/missing"], in: pair.host)
        stopTcpdump(tcpdump, pcap)
        #expect(curl.output == "200\n200\n404\n", "\(curl.output)")
        let replay = try runSluice(["replay", pcap, "--profile", profile, "--format", "flowlog"])
        #expect(replay.status == 0, "\(replay.stderr)")
        let lines = try replay.stdout.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        let flows = lines.filter { $0["kind"] as? String == "connection" }
        let requests = lines.filter { $0["kind"] as? String == "http" }
        #expect(flows.count == 1, "\(replay.stdout)")
        #expect(flows.first?["domain"] as? String == "origin.test")
        #expect(flows.first?["domainSource"] as? String == "host")
        #expect(flows.first?["status"] as? String == "closed")
        #expect(requests.map { $0["url"] as? String ?? "" } == ["http://origin.test:8080/hello.txt", "http://origin.test:8080/api/hello.txt",
                                                                "http://origin.test:8080/missing"])
        #expect(requests.map { $0["status"] as? Int ?? 0 } == [200, 200, 404])
        #expect(requests.map { $0["rule"] as? String ?? "" } == ["\(profile):4: DOMAIN,origin.test,DIRECT → DIRECT",
                                                                 "\(profile):2: URL-REGEX,\"^http://origin\\\\.test:8080/api/\",DIRECT → DIRECT",
                                                                 "\(profile):4: DOMAIN,origin.test,DIRECT → DIRECT"])
        #expect(Set(requests.map { $0["connection"] as? Int ?? -1 }).count == 1)
    }
}
