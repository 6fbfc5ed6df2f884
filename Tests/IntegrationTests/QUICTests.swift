import Foundation
import Testing
import TestSupport

/// QUIC (HTTP/3) flows sent to an address, not to a fake IP: DOMAIN rules see
/// the server name in the ClientHello that the client's Initial packets
/// carry. A real client and server (ngtcp2's, from Debian), and datagrams
/// built by QUICInitialBuilder for what that client does not do: a hello
/// across datagrams, which must be held until it is whole and then relayed
/// in order.
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces and TUN devices"), .serialized)
final class QUICTests {
    let pair: ServerPair
    var net: TestNetwork { pair.net }

    init() throws {
        pair = try ServerPair("quic")
        try "hello over quic\n".write(to: pair.work.appendingPathComponent("hello.txt"), atomically: true, encoding: .utf8)
    }

    func profile(_ text: String) throws -> String {
        let path = pair.path("quic.conf")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// gtlsclient names the server in its SNI only when given a name: the
    /// profile's [Host] answers it with the real address, so the flow's
    /// destination names nothing and only the Initial packets can. Each name
    /// gets an address of its own: with one address for all three, a client
    /// given the same ephemeral port as the first would send into that
    /// still-open DIRECT flow (the same 5-tuple) and download the file. The
    /// two rejected addresses need no server, since nothing reaches them.
    @Test func aRealClientIsDecidedByTheNameInItsInitialPackets() throws {
        // A throwaway certificate: gtlsserver needs one, gtlsclient checks nothing.
        try net.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", pair.path("key.pem"), "-out", pair.path("cert.pem"), "-days", "2", "-subj", "/CN=quic.test"])
        try net.start(["/usr/sbin/gtlsserver", "-q", "-d", pair.work.path, "10.88.0.2", "4433", pair.path("key.pem"), pair.path("cert.pem")],
                      in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:4433"))
        let path = try profile("""
        [Rule]
        DOMAIN,blocked.test,REJECT
        DOMAIN,closed.test,REJECT-RST
        AND,((PROTOCOL,QUIC),(DOMAIN,quic.test)),DIRECT
        FINAL,REJECT
        [Host]
        quic.test = 10.88.0.2
        blocked.test = 10.88.0.3
        closed.test = 10.88.0.4
        """)
        let log = pair.path("quic.jsonl")
        let allowed = pair.path("allowed"), blocked = pair.path("blocked"), pcap = pair.path("quic.pcap")
        let r = try pair.exec("""
        mkdir -p \(allowed) \(blocked)
        timeout 20 gtlsclient -q --exit-on-all-streams-close --download=\(allowed) quic.test 4433 https://quic.test/hello.txt; echo "quic.test $?"
        timeout 3 gtlsclient -q --exit-on-all-streams-close --download=\(blocked) blocked.test 4433 https://blocked.test/hello.txt; echo "blocked.test $?"
        timeout 2 gtlsclient -q --exit-on-all-streams-close --download=\(blocked) closed.test 4433 https://closed.test/hello.txt; echo "closed.test $?"
        """, options: ["--profile", path, "--flow-log", log, "--pcap", pcap])
        #expect(r.status == 0, "\(r.stderr)")
        // 124: timeout ended a client whose datagrams went nowhere. ngtcp2's
        // example client ignores ICMP errors, so REJECT-RST's port unreachable
        // shows in the capture instead (a browser's connected socket fails at
        // once and it falls back to TCP; ProfileTests checks such a socket).
        #expect(r.stdout == "quic.test 0\nblocked.test 124\nclosed.test 124\n", "\(r.stdout)\(r.stderr)")
        let unreachable = try net.run(["tshark", "-n", "-r", pcap, "-Y", "icmp.type == 3 and icmp.code == 3 and udp.dstport == 4433",
                                        "-T", "fields", "-e", "ip.src", "-e", "udp.dstport"]).output
            .split(separator: "\n").filter { !$0.hasPrefix("Running as user") }
        // From the server's address, quoting the app's datagram (the app's own kernel may
        // send some too, for packets from 4433 to a client that had gone: not these).
        #expect(unreachable == ["10.88.0.4,10.233.0.1\t4433"], "one port unreachable, for the closed.test flow's first datagram: \(unreachable)")
        #expect((try? String(contentsOfFile: allowed + "/hello.txt", encoding: .utf8)) == "hello over quic\n")
        #expect(!FileManager.default.fileExists(atPath: blocked + "/hello.txt"))
        let flows = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        for line in open(sys.argv[1]):
            r = json.loads(line)
            if r["kind"] == "connection" and r["transport"] == "udp" and r["destinationPort"] == 4433:
                print(r["domain"], r["domainSource"], r["policy"], r["status"], r["bytesDown"] > 0)
        """, log]).output.split(separator: "\n").map(String.init).sorted()
        #expect(flows == ["blocked.test sni REJECT blocked False", "closed.test sni REJECT-RST blocked False", "quic.test sni DIRECT closed True"],
                "\(flows)\n\(r.stderr)")

        // Replayed from the capture, the three flows are named and decided as live.
        let replay = try runSluice(["replay", pcap, "--profile", path, "--format", "flowlog"])
        #expect(replay.status == 0, "\(replay.stderr)")
        let replayed = replay.stdout.split(separator: "\n").compactMap { line -> String? in
            guard let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  record["transport"] as? String == "udp", record["destinationPort"] as? Int == 4433 else { return nil }
            return "\(record["domain"] ?? "-") \(record["domainSource"] ?? "-") \(record["policy"] ?? "-")"
        }.sorted()
        #expect(replayed == ["blocked.test sni REJECT", "closed.test sni REJECT-RST", "quic.test sni DIRECT"], "\(replay.stdout)")
    }

    /// Three flows from one sender to an echo in the server namespace: a
    /// hello across two datagrams for big.test (FINAL,DIRECT: both arrive, in
    /// order), the same for far.test (REJECT: neither arrives), and only the
    /// first half of one for far.test (decided without its name when the
    /// 300 ms wait ends: DIRECT, and the held datagram goes on).
    @Test func aHelloAcrossDatagramsIsHeldUntilWhole() throws {
        let halves = { (name: String) in QUICInitialBuilder.helloInTwoDatagrams(serverName: name) }
        let big = halves("big.test"), far = halves("far.test"), lone = [halves("far.test")[0]]
        for (name, datagrams) in [("big", big), ("far", far), ("lone", lone)] {
            for (i, datagram) in datagrams.enumerated() {
                try Data(datagram).write(to: URL(fileURLWithPath: pair.path("\(name)-\(i).bin")))
            }
        }
        let received = pair.path("echo.txt")
        try net.start(["/usr/bin/python3", "-c", """
        import socket, select, sys, time
        socks = []
        for port in (4434, 4435, 4436):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.88.0.2", port)); socks.append(s)
        out = open(sys.argv[1], "w", buffering=1)
        end = time.time() + 60
        while time.time() < end:
            for s in select.select(socks, [], [], 1)[0]:
                data, peer = s.recvfrom(65535)
                port = s.getsockname()[1]
                out.write("%d %d %s\\n" % (port, len(data), data[-8:].hex()))
                s.sendto(b"%d:%d" % (port, len(data)), peer)
        """, received], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:4436"))
        let path = try profile("""
        [Rule]
        DOMAIN,far.test,REJECT
        FINAL,DIRECT
        """)
        let log = pair.path("held.jsonl")
        let r = try pair.exec("""
        /usr/bin/python3 - <<'EOF'
        import socket
        def flow(name, count, port, expected, wait):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for i in range(count):
                s.sendto(open("\(pair.work.path)/%s-%d.bin" % (name, i), "rb").read(), ("10.88.0.2", port))
            s.settimeout(wait)
            replies = []
            try:
                while len(replies) < expected: replies.append(s.recv(64).decode())
            except OSError: pass
            print(name, " ".join(replies) or "-")
        flow("big", 2, 4434, 2, 5)
        flow("far", 2, 4435, 1, 1)
        flow("lone", 1, 4436, 1, 5)
        EOF
        """, options: ["--profile", path, "--flow-log", log])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "big 4434:1200 4434:1200\nfar -\nlone 4436:1200\n", "\(r.stdout)\(r.stderr)")
        let lines = ((try? String(contentsOfFile: received, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        // Each datagram told apart by its last 8 bytes (its AEAD tag's).
        let tail = { (bytes: [UInt8]) in "\(bytes.count) " + bytes.suffix(8).map { String(format: "%02x", $0) }.joined() }
        #expect(lines == ["4434 \(tail(big[0]))", "4434 \(tail(big[1]))", "4436 \(tail(lone[0]))"])
        let flows = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        for line in open(sys.argv[1]):
            r = json.loads(line)
            if r["kind"] == "connection" and r["transport"] == "udp":
                print(r["destinationPort"], r["domain"], r["domainSource"], r["policy"], r["status"])
        """, log]).output.split(separator: "\n").map(String.init).sorted()
        #expect(flows == ["4434 big.test sni DIRECT closed", "4435 far.test sni REJECT blocked", "4436 None None DIRECT closed"], "\(flows)\n\(r.stderr)")
    }

    /// The default DNS mode: the app gets a fake IP and Sluice resolves the
    /// real address only when the flow's first datagram arrives. The
    /// datagrams sent meanwhile wait for it and then go, in order; a QUIC
    /// client whose first Initial was dropped would send it again only after
    /// its probe timeout (a second, for ngtcp2's client).
    @Test func datagramsSentWhileTheNameResolvesAreKept() throws {
        try net.start(["dnsmasq", "--no-daemon", "--no-resolv", "--no-hosts", "--bind-interfaces", "--listen-address=10.88.0.2",
                       "--port=53", "--host-record=burst.test,10.88.0.2", "--host-record=v6only.test,fd00:88::2",
                       "--log-facility=/dev/null"], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:53"))
        let received = pair.path("burst.txt")
        try net.start(["/usr/bin/python3", "-c", """
        import select, socket, sys, time
        v4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); v4.bind(("10.88.0.2", 4437))
        v6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); v6.bind(("fd00:88::2", 4437))
        out = open(sys.argv[1], "w", buffering=1)
        end = time.time() + 60
        while time.time() < end:
            for s in select.select([v4, v6], [], [], 1)[0]:
                data, peer = s.recvfrom(65535)
                out.write(data.decode() + "\\n"); s.sendto(data, peer)
        """, received], in: pair.server)
        #expect(pair.waitForListener("[fd00:88::2]:4437"))
        let path = try profile("""
        [General]
        dns-server = 10.88.0.2

        [Rule]
        FINAL,DIRECT
        """)
        let r = try pair.exec("""
        /usr/bin/python3 - <<'EOF'
        import errno, socket
        def burst(name, words):
            address = socket.getaddrinfo(name, 4437, socket.AF_INET, socket.SOCK_DGRAM)[0][4]
            fake = address[0].startswith("198.18.") or address[0].startswith("198.19.")
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(address)
            # Linux reports ICMP host unreachable on a UDP socket only with IP_RECVERR (port unreachable always).
            s.setsockopt(socket.IPPROTO_IP, 11, 1)
            for word in words: s.send(word)
            s.settimeout(3)
            replies = []
            try:
                while len(replies) < len(words): replies.append(s.recv(16).decode())
            except socket.timeout: replies.append("timeout")
            except OSError as e: replies.append(errno.errorcode.get(e.errno, str(e.errno)))
            print(name, "fake" if fake else address[0], " ".join(replies))
        burst("burst.test", (b"one", b"two", b"three"))
        burst("v6only.test", (b"four", b"five"))
        burst("nowhere.test", (b"six",))
        EOF
        """, options: ["--profile", path])
        #expect(r.status == 0, "\(r.stderr)")
        // v6only.test has no A record: its IPv4 flow goes to the AAAA, as TCP's
        // do; nowhere.test has neither, and the socket hears host unreachable.
        #expect(r.stdout == "burst.test fake one two three\nv6only.test fake four five\nnowhere.test fake EHOSTUNREACH\n", "\(r.stdout)\(r.stderr)")
        #expect((try? String(contentsOfFile: received, encoding: .utf8)) == "one\ntwo\nthree\nfour\nfive\n")
    }
}
