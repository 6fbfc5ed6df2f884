import Foundation
import Testing
import TestSupport

/// `sluice exec --profile` sending flows through real upstream proxies (danted,
/// tinyproxy) and a fake one that misbehaves on purpose. The origin sits
/// behind the proxies' namespace (ProxyTopology): a flow that went DIRECT
/// instead of through the proxy cannot reach it, so no test passes by accident.
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces, TUN devices and a system user"), .serialized)
final class ProxyTests {
    let topology: ProxyTopology
    let digest: String

    init() throws {
        topology = try ProxyTopology("proxy")
        digest = try topology.makeFile("1m.bin", bytes: 1_048_576)
    }

    /// `timed NAME command...` prints `NAME rc=STATUS ms=ELAPSED`; `timings` reads those lines back.
    static let timed = """
    timed() { local name=$1; shift; local s=$(date +%s%N); "$@" >/dev/null 2>&1; local rc=$?; echo "$name rc=$rc ms=$(( ($(date +%s%N) - s) / 1000000 ))"; }

    """


    struct Timing { var status: Int; var milliseconds: Int }

    static func timings(_ output: String) -> [String: Timing] {
        var result: [String: Timing] = [:]
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[1].hasPrefix("rc="), parts[2].hasPrefix("ms="),
                  let status = Int(parts[1].dropFirst(3)), let ms = Int(parts[2].dropFirst(3)) else { continue }
            result[String(parts[0])] = Timing(status: status, milliseconds: ms)
        }
        return result
    }

    /// curl's exit for a connection the network refused with a RST (7) or reset after connecting (56).
    static func isReset(_ timing: Timing?) -> Bool { timing.map { $0.status == 7 || $0.status == 56 } ?? false }

    // MARK: 1. TCP through danted

    @Test func tcpThroughDantedReachesAnOriginOnlyTheProxyCanReach() throws {
        try topology.startDanted(port: 1080)
        let direct = try topology.profile("""
        [Rule]
        FINAL,DIRECT

        [Host]
        origin.test = 10.89.0.2
        """, name: "direct.conf")
        // Without the proxy the origin is out of reach: the host namespace has no route to it.
        let r0 = try topology.exec(Self.timed + "timed direct curl -sS --max-time 5 http://origin.test:8080/hello.txt", profile: direct)
        let directTiming = Self.timings(r0.stdout)["direct"]
        #expect(directTiming != nil && directTiming?.status != 0, "\(r0.stdout) \(r0.stderr)")

        let path = try topology.profile("""
        [Proxy]
        corp-socks = socks5, 10.88.0.2, 1080

        [Rule]
        FINAL,corp-socks

        [Host]
        origin.test = 10.89.0.2
        """)
        let r = try topology.exec("""
        curl -sS --max-time 30 http://origin.test:8080/1m.bin | sha256sum | cut -c1-64
        curl -sS --max-time 5 http://origin.test:8080/hello.txt
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "\(digest)\nhello from the origin\n", "\(r.stdout) \(r.stderr)")
        let log = topology.log("danted-1080.log")
        // A [Host] name is an address to Sluice: the proxy is asked for the address (ATYP 1).
        #expect(log.contains("ATYP: 1 address: 10.89.0.2.8080"), "\(log.suffix(3000))")
        #expect(log.contains("tcp/connect [: 10.88.0.1."), "\(log.suffix(3000))")
    }

    // MARK: 2. danted with username and password

    @Test func dantedChecksUsernameAndPassword() throws {
        let user = try topology.makeUser(password: "right-pass")
        try topology.startDanted(port: 1081, username: true)
        let path = try topology.profile("""
        [Proxy]
        good = socks5, 10.88.0.2, 1081, username=\(user), password=right-pass
        bad = socks5, 10.88.0.2, 1081, username=\(user), password=wrong-pass

        [Rule]
        DOMAIN,good.test,good
        DOMAIN,bad.test,bad
        FINAL,DIRECT
        """)
        let r = try topology.exec(Self.timed + """
        curl -sS --max-time 30 http://good.test:8080/1m.bin | sha256sum | cut -c1-64
        timed bad curl -sS --max-time 10 http://bad.test:8080/hello.txt
        """, profile: path)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == digest, "\(r.stdout) \(r.stderr)")
        let bad = Self.timings(r.stdout)["bad"]
        #expect(Self.isReset(bad), "\(r.stdout) \(r.stderr)")
        #expect((bad?.milliseconds ?? .max) < 3000, "\(r.stdout)")
        // One clear line: which proxy, and that it refused our credentials.
        let line = r.stderr.split(separator: "\n").first { $0.contains("proxy bad ") }
        #expect(line?.contains("rejected the credentials") == true, "\(r.stderr)")
        let log = topology.log("danted-1081.log")
        #expect(log.contains("username%\(user)@10.88.0.1"), "\(log.suffix(3000))")
        #expect(log.contains("password authentication failed for user \"\(user)\""), "\(log.suffix(3000))")
    }

    // MARK: 3. tinyproxy: CONNECT and absolute form

    @Test func tinyproxyCarriesRawTCPByConnect() throws {
        try topology.startTinyproxy(port: 8888, basicAuth: ("sluice", "tiny-pass"))
        // No HTTP feature in the profile: flows stay raw TCP, so the HTTP proxy gets CONNECT.
        let path = try topology.profile("""
        [Proxy]
        web = http, 10.88.0.2, 8888, username=sluice, password=tiny-pass
        web-bad = http, 10.88.0.2, 8888, username=sluice, password=wrong

        [Rule]
        DOMAIN,bad.test,web-bad
        FINAL,web
        """)
        let r = try topology.exec(Self.timed + """
        curl -sS --max-time 30 http://origin.test:8080/1m.bin | sha256sum | cut -c1-64
        curl -sS --max-time 5 http://origin.test:8080/echo
        timed bad curl -sS --max-time 10 http://bad.test:8080/hello.txt
        """, profile: path)
        #expect(r.stdout.hasPrefix("\(digest)\nmethod=GET uri=/echo host=origin.test env= proxyauth=\n"), "\(r.stdout) \(r.stderr)")
        let log = topology.log("tinyproxy-8888.log")
        #expect(log.contains("CONNECT origin.test:8080 HTTP/1.1"), "\(log.suffix(3000))")
        #expect(!log.contains("GET http://origin.test:8080/"), "\(log.suffix(3000))")
        // Wrong credentials: tinyproxy answers 407, the app sees a reset, stderr says why.
        let bad = Self.timings(r.stdout)["bad"]
        #expect(Self.isReset(bad), "\(r.stdout) \(r.stderr)")
        #expect((bad?.milliseconds ?? .max) < 3000, "\(r.stdout)")
        let line = r.stderr.split(separator: "\n").first { $0.contains("proxy web-bad ") }
        #expect(line?.contains("rejected the credentials") == true, "\(r.stderr)")
    }

    @Test func httpModeForwardsPlainHTTPInAbsoluteForm() throws {
        try topology.startTinyproxy(port: 8888, basicAuth: ("sluice", "tiny-pass"))
        // A [Header Rewrite] puts Sluice in HTTP mode: requests go to the proxy in absolute form, with our credentials.
        let path = try topology.profile("""
        [Proxy]
        web = http, 10.88.0.2, 8888, username=sluice, password=tiny-pass

        [Rule]
        FINAL,web

        [Header Rewrite]
        http-request ^http://origin\\.test:8080/ header-add X-Env staging
        """)
        let r = try topology.exec("""
        curl -sS --max-time 5 http://origin.test:8080/echo
        curl -sS --max-time 5 'http://origin.test:8080/echo?second=1'
        curl -sS --max-time 30 http://origin.test:8080/1m.bin | sha256sum | cut -c1-64
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == """
        method=GET uri=/echo host=origin.test env=staging proxyauth=
        method=GET uri=/echo?second=1 host=origin.test env=staging proxyauth=
        \(digest)

        """, "\(r.stdout) \(r.stderr)")
        let log = topology.log("tinyproxy-8888.log")
        #expect(log.contains("GET http://origin.test:8080/echo HTTP/1.1"), "\(log.suffix(3000))")
        #expect(log.contains("GET http://origin.test:8080/echo?second=1 HTTP/1.1"), "\(log.suffix(3000))")
        // (tinyproxy's log level is spelled CONNECT too: look at the request lines only.)
        #expect(!log.contains("): CONNECT "), "\(log.suffix(3000))")
    }

    /// A forward proxy that keeps connections alive: each answer names the
    /// connection it came on, so reuse across app connections shows.
    static let keepAliveProxy = """
    import socket, sys, threading
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("10.88.0.2", 8899)); s.listen(16); s.settimeout(120)
    count = 0
    def serve(c, n):
        c.settimeout(60); data = b""
        while True:
            while b"\\r\\n\\r\\n" not in data:
                chunk = c.recv(65536)
                if not chunk: return
                data += chunk
            head, _, data = data.partition(b"\\r\\n\\r\\n")
            line = head.split(b"\\r\\n")[0].decode()
            body = f"connection {n}: {line}\\n".encode()
            c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body)
    while True:
        c, _ = s.accept(); count += 1
        threading.Thread(target=serve, args=(c, count), daemon=True).start()
    """

    @Test func forwardProxyConnectionsAreKeptAliveAcrossAppConnections() throws {
        let log = topology.path("keepalive-proxy.out")
        _ = try topology.net.start(["/usr/bin/python3", "-c", Self.keepAliveProxy], in: topology.proxy, log: log)
        try topology.waitForListener("10.88.0.2:8899", in: topology.proxy, what: "keep-alive proxy")
        let path = try topology.profile("""
        [Proxy]
        web = http, 10.88.0.2, 8899

        [Rule]
        FINAL,web

        [Header Rewrite]
        http-request ^http://origin\\.test/ header-add X-Env staging
        """)
        // Three curls one after another: three app connections.
        let r = try topology.exec("""
        curl -sS --max-time 5 http://origin.test/a
        curl -sS --max-time 5 http://origin.test/b
        curl -sS --max-time 5 http://origin.test/c
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == """
        connection 1: GET http://origin.test/a HTTP/1.1
        connection 1: GET http://origin.test/b HTTP/1.1
        connection 1: GET http://origin.test/c HTTP/1.1

        """, "\(r.stdout) \(r.stderr)")
    }

    // MARK: 4. Names

    @Test func proxiesReceiveTheNameNotTheFakeAddress() throws {
        try topology.startDanted(port: 1080)
        try topology.startTinyproxy(port: 8888)
        // No [Host] entries: the app gets fake IPs, and only the proxy namespace knows the names.
        let path = try topology.profile("""
        [Proxy]
        corp-socks = socks5, 10.88.0.2, 1080
        web = http, 10.88.0.2, 8888

        [Rule]
        DOMAIN,far.test,corp-socks
        DOMAIN,named.test,web
        FINAL,DIRECT
        """)
        let r = try topology.exec("""
        dig +short far.test A
        curl -sS --max-time 5 http://far.test:8080/hello.txt
        curl -sS --max-time 5 http://named.test:8080/hello.txt
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(r.stdout) \(r.stderr)")
        // A fake address (198.18.0.0/15 by default), which no proxy could route.
        #expect(lines.first?.hasPrefix("198.1") == true, "\(r.stdout)")
        #expect(Array(lines.dropFirst()) == ["hello from the origin", "hello from the origin"], "\(r.stdout) \(r.stderr)")
        let danted = topology.log("danted-1080.log")
        #expect(danted.contains("ATYP: 3 address: far.test.8080"), "\(danted.suffix(3000))")
        let tiny = topology.log("tinyproxy-8888.log")
        #expect(tiny.contains("CONNECT named.test:8080 HTTP/1.1"), "\(tiny.suffix(3000))")
    }

    // MARK: 5. Failures mapped to what the app sees

    @Test func unreachableAndRefusingProxiesFailFast() throws {
        try topology.startDanted(port: 1080, blockPort: 9999)
        let path = try topology.profile("""
        [Proxy]
        corp-socks = socks5, 10.88.0.2, 1080
        dead = socks5, 10.88.0.2, 1099

        [Rule]
        DOMAIN,dead.test,dead
        FINAL,corp-socks

        [Host]
        refused.test = 10.89.0.2
        """)
        let r = try topology.exec(Self.timed + """
        timed dead curl -sS --max-time 10 http://dead.test:8080/hello.txt
        timed refused curl -sS --max-time 10 http://refused.test:9999/
        timed ok curl -sS --max-time 10 http://refused.test:8080/hello.txt
        """, profile: path)
        let t = Self.timings(r.stdout)
        // Nothing listens on the proxy's port: the app is refused at once.
        #expect(Self.isReset(t["dead"]), "\(r.stdout) \(r.stderr)")
        #expect((t["dead"]?.milliseconds ?? .max) < 2000, "\(r.stdout)")
        // danted refuses the destination by rule (REP 2): the app's connect fails, and stderr says why.
        #expect(t["refused"]?.status == 7 || t["refused"]?.status == 56, "\(r.stdout) \(r.stderr)")
        #expect((t["refused"]?.milliseconds ?? .max) < 3000, "\(r.stdout)")
        let line = r.stderr.split(separator: "\n").first { $0.contains("proxy corp-socks ") }
        #expect(line?.contains("not allowed") == true, "\(r.stderr)")
        #expect(line?.contains("10.89.0.2:9999") == true, "\(r.stderr)")
        #expect(t["ok"]?.status == 0, "\(r.stdout) \(r.stderr)")
        let log = topology.log("danted-1080.log")
        #expect(log.contains("block(1): tcp/connect"), "\(log.suffix(3000))")
    }

    @Test func httpModeAnswersAFailedProxyWithAnHTTPError() throws {
        try topology.startDanted(port: 1080, blockPort: 9999)
        // In HTTP mode the app's request is already parsed: a failure upstream is answered, not reset.
        let path = try topology.profile("""
        [Proxy]
        corp-socks = socks5, 10.88.0.2, 1080
        dead-socks = socks5, 10.88.0.2, 1099
        dead-http = http, 10.88.0.2, 1098

        [Rule]
        DOMAIN,dead.test,dead-socks
        DOMAIN,deadhttp.test,dead-http
        FINAL,corp-socks

        [Host]
        refused.test = 10.89.0.2

        [Header Rewrite]
        http-request ^http://origin\\.test:8080/ header-add X-Env staging
        """)
        // Each answer as "STATUS BODY" on one line.
        let r = try topology.exec("""
        get() { local code; code=$(curl -s --max-time 10 -o /tmp/body.$$ -w '%{http_code}' "$1"); echo "$code $(tr '\\n' ' ' < /tmp/body.$$)"; rm -f /tmp/body.$$; }
        get http://dead.test:8080/hello.txt
        get http://deadhttp.test:8080/hello.txt
        get http://refused.test:9999/x
        get http://origin.test:8080/echo
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(r.stdout) \(r.stderr)")
        guard lines.count == 4 else { return }
        // Nothing listens where the proxy should be: 502, and the body says so.
        #expect(lines[0].hasPrefix("502 sluice: ") && lines[0].contains("refused"), "\(lines[0])")
        #expect(lines[1].hasPrefix("502 sluice: ") && lines[1].contains("refused"), "\(lines[1])")
        // danted refuses the destination by rule. docs/relay.md gives 403 for "not allowed by ruleset",
        // issue #5 says 502 for parsed HTTP: either way Sluice answers, and the body says why.
        #expect(lines[2].hasPrefix("403 ") || lines[2].hasPrefix("502 "), "\(lines[2])")
        #expect(lines[2].contains("proxy corp-socks") && lines[2].contains("not allowed"), "\(lines[2])")
        #expect(lines[3] == "200 method=GET uri=/echo host=origin.test env=staging proxyauth= ", "\(r.stdout) \(r.stderr)")
        #expect(topology.log("danted-1080.log").contains("block(1): tcp/connect"))
    }

    // MARK: 6. A fake proxy's faults

    @Test func aMisbehavingProxyFailsOnlyItsOwnFlows() throws {
        try topology.startDanted(port: 1080)
        try topology.startFakeProxy()
        let path = try topology.profile(Self.faultProfile)
        let r = try topology.exec(Self.timed + """
        timed close curl -sS --max-time 10 http://close.test:8080/hello.txt
        timed garbage curl -sS --max-time 10 http://garbage.test:8080/hello.txt
        timed badauth curl -sS --max-time 10 http://badauth.test:8080/hello.txt
        curl -sS --max-time 30 http://origin.test:8080/1m.bin | sha256sum | cut -c1-64
        """, profile: path)
        let t = Self.timings(r.stdout)
        let stderr = r.stderr.split(separator: "\n")
        // A close right after accept reaches Sluice as a FIN, or as a RST when
        // Sluice's greeting was already in the fake proxy's receive buffer: either is a clear reason.
        for (fault, proxy, reasons) in [("close", "fake-close", ["closed during the handshake", "ECONNRESET"]),
                                        ("garbage", "fake-garbage", ["protocol violation"]),
                                        ("badauth", "fake-badauth", ["rejected the credentials"])] {
            #expect(Self.isReset(t[fault]), "\(fault): \(r.stdout) \(r.stderr)")
            #expect((t[fault]?.milliseconds ?? .max) < 3000, "\(fault): \(r.stdout)")
            let line = stderr.first { $0.contains("proxy \(proxy)") }
            #expect(line.map { line in reasons.contains { line.contains($0) } } == true, "\(fault): \(r.stderr)")
        }
        #expect(r.stdout.hasSuffix("\(digest)\n"), "\(r.stdout) \(r.stderr)")
        let fake = topology.log("fake-proxy.log")
        // RFC 1929: version 1, "u", "p".
        #expect(fake.contains("badAuth auth 0101750170"), "\(fake)")
        #expect(fake.contains("garbage greeting 05"), "\(fake)")
    }

    @Test
    func aStalledProxyTimesOutWithoutStallingOtherFlows() throws {
        try topology.startDanted(port: 1080)
        try topology.startFakeProxy()
        let path = try topology.profile(Self.faultProfile)
        let stallOutput = topology.path("stall.out")
        let r = try topology.exec(Self.timed + """
        timed stall curl -sS --max-time 25 http://stall.test:8080/hello.txt > \(stallOutput) &
        stall=$!
        sleep 0.5
        timed good curl -sS --max-time 10 -o /dev/null http://origin.test:8080/1m.bin
        wait $stall
        cat \(stallOutput)
        """, profile: path, timeout: 60)
        let t = Self.timings(r.stdout)
        #expect(t["good"]?.status == 0, "\(r.stdout) \(r.stderr)")
        // HandshakeDeadlines.default: 5 s for the greeting, so well before curl's own 25 s.
        #expect(Self.isReset(t["stall"]), "\(r.stdout) \(r.stderr)")
        #expect((t["stall"]?.milliseconds ?? .max) < 12000, "\(r.stdout)")
        let line = r.stderr.split(separator: "\n").first { $0.contains("proxy fake-stall ") }
        #expect(line?.contains("timed out") == true, "\(r.stderr)")
        #expect(topology.log("fake-proxy.log").contains("stall greeting 05"))
    }

    static let faultProfile = """
    [Proxy]
    corp-socks = socks5, 10.88.0.2, 1080
    fake-close = socks5, 10.88.0.2, \(FakeProxy.Fault.close.port)
    fake-garbage = socks5, 10.88.0.2, \(FakeProxy.Fault.garbage.port)
    fake-stall = socks5, 10.88.0.2, \(FakeProxy.Fault.stall.port)
    fake-badauth = socks5, 10.88.0.2, \(FakeProxy.Fault.badAuth.port), username=u, password=p

    [Rule]
    DOMAIN,close.test,fake-close
    DOMAIN,garbage.test,fake-garbage
    DOMAIN,stall.test,fake-stall
    DOMAIN,badauth.test,fake-badauth
    FINAL,corp-socks
    """

    // MARK: 7. UDP through SOCKS5, and fallback groups

    @Test
    func dnsQueriesTravelThroughSOCKS5UDPAssociate() throws {
        try topology.startDanted(port: 1080)
        try topology.startDNS()
        let path = try topology.profile("""
        [Proxy]
        corp-socks = socks5, 10.88.0.2, 1080, udp-relay=true

        [Rule]
        FINAL,corp-socks
        """)
        let r = try topology.exec("""
        dig +short +time=2 +tries=3 @10.89.0.2 answer.test A
        dig +short +time=2 +tries=3 @10.89.0.2 second.test A
        curl -sS --max-time 5 http://origin.test:8080/hello.txt
        """, profile: path)
        #expect(r.stdout == "10.89.0.7\n10.89.0.7\nhello from the origin\n", "\(r.stdout) \(r.stderr)")
        // The server saw the queries come from danted's external address, not from Sluice.
        let queries = topology.log("dns.log")
        #expect(queries.contains("query answer.test type 1 from 10.89.0.1"), "\(queries)")
        #expect(queries.contains("query second.test type 1 from 10.89.0.1"), "\(queries)")
        let log = topology.log("danted-1080.log")
        // danted's debug line for each request: command 3 is UDP ASSOCIATE.
        #expect(log.contains("VER: 5 CMD: 3 "), "\(log.suffix(3000))")
    }

    /// Everything through a fallback group of two danted, checked every second.
    static func fallbackProfile(ports first: Int, _ second: Int) -> String {
        """
        [Proxy]
        socks-a = socks5, 10.88.0.2, \(first)
        socks-b = socks5, 10.88.0.2, \(second)

        [Proxy Group]
        egress = fallback, socks-a, socks-b, url=http://health.test:8080/hello.txt, interval=1, timeout=1

        [Rule]
        FINAL,egress

        [Host]
        health.test = 10.89.0.2
        """
    }

    @Test
    func aFallbackGroupMovesOnWhenItsProxyDies() throws {
        try topology.startDanted(port: 1082)
        try topology.startDanted(port: 1083)
        let phase = topology.path("phase1"), killed = topology.path("killed")
        let path = try topology.profile(Self.fallbackProfile(ports: 1082, 1083))
        let r = try topology.exec("""
        curl -sS --max-time 5 http://origin.test:8080/hello.txt; echo "first=$?"
        touch \(phase)
        for i in $(seq 100); do [ -e \(killed) ] && break; sleep 0.1; done
        ok=no
        for i in $(seq 30); do
          if curl -s --max-time 2 -o /dev/null http://origin.test:8080/hello.txt; then ok=yes; break; fi
          sleep 0.5
        done
        echo "after=$ok"
        for i in 1 2 3; do curl -s -o /dev/null -w '%{http_code}\\n' --max-time 3 http://origin.test:8080/hello.txt; done
        """, profile: path, timeout: 90) { _ in
            // The test, not the app, kills the active member: by PID, once the first flow went through it.
            _ = TestNetwork.waitUntil(seconds: 30) { FileManager.default.fileExists(atPath: phase) }
            self.topology.stop("danted-1082", address: "10.88.0.2:1082")
            _ = FileManager.default.createFile(atPath: killed, contents: nil)
        }
        #expect(r.stdout == "hello from the origin\nfirst=0\nafter=yes\n200\n200\n200\n", "\(r.stdout) \(r.stderr)")
        #expect(topology.log("danted-1082.log").contains("tcp/connect [: 10.88.0.1."))
        #expect(topology.log("danted-1083.log").contains("ATYP: 3 address: origin.test.8080"), "\(topology.log("danted-1083.log").suffix(3000))")
        // The switch is logged when it happens, and the exit summary shows the group's health.
        #expect(r.stderr.contains("sluice: group egress: socks-a → socks-b"), "\(r.stderr)")
        let groups = r.stderr.split(separator: "\n").drop { $0 != "groups:" }.dropFirst().first.map(String.init) ?? ""
        #expect(groups.hasPrefix("egress: fallback → socks-b (healthy") && groups.contains("socks-a (down)"), "\(r.stderr)")
    }

    /// `sluice proxy` checks a fallback group's members as the tunnel does:
    /// once its active proxy dies, its clients go through the next one.
    @Test
    func theProxyListenerFailsOverAFallbackGroupToo() throws {
        try topology.startDanted(port: 1084)
        try topology.startDanted(port: 1085)
        let path = try topology.profile(Self.fallbackProfile(ports: 1084, 1085), name: "listener.conf")
        let log = topology.path("sluice-proxy.log")
        let server = try topology.net.start([sluiceBinary, "proxy", "--no-control", "--listen", "127.0.0.1:11200", "--profile", path],
                                            in: topology.host, log: log)
        defer { server.terminate(graceMilliseconds: 3000) }
        #expect(TestNetwork.waitUntil(seconds: 15) {
            ((try? self.topology.net.run(["ss", "-ltnH"], in: self.topology.host).output) ?? "").contains("127.0.0.1:11200 ")
        })
        let curl = "curl -sS --max-time 3 --socks5-hostname 127.0.0.1:11200 http://origin.test:8080/hello.txt"
        let first = try topology.net.run(["sh", "-c", curl], in: topology.host, check: false).output
        topology.stop("danted-1084", address: "10.88.0.2:1084")
        let moved = TestNetwork.waitUntil(seconds: 20) {
            ((try? self.topology.net.run(["sh", "-c", curl], in: self.topology.host, check: false).output) ?? "") == "hello from the origin\n"
        }
        let after = try topology.net.run(["sh", "-c", "for i in 1 2 3; do \(curl); done"], in: topology.host, check: false).output
        server.terminate(graceMilliseconds: 3000)
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(first == "hello from the origin\n", "\(first) \(text)")
        #expect(moved, "\(text)")
        #expect(after == String(repeating: "hello from the origin\n", count: 3), "\(after) \(text)")
        #expect(text.contains("group egress: socks-a → socks-b"), "\(text)")
        #expect(topology.log("danted-1085.log").contains("ATYP: 3 address: origin.test.8080"), "\(topology.log("danted-1085.log").suffix(2000))")
    }
}
