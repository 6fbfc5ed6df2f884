import Foundation
import Testing
import TestSupport

/// `sluice run --netns NAME`: Sluice attaches to a namespace the test made,
/// relays it until SIGINT, and leaves nothing behind.
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces and TUN devices"), .serialized)
final class RunTests {
    let pair: ServerPair
    let app: String

    init() throws {
        pair = try ServerPair("run")
        app = try pair.net.namespace("app")
        try pair.makeFile("1m.bin", bytes: 1_048_576)
    }

    @Test func relaysAnExistingNamespaceAndCleansUp() throws {
        let net = pair.net
        let expected = try pair.digest("1m.bin")
        var digest = "", resolver = "", routes = "", limits = ""
        // Started with a soft open-files limit of 256: Sluice lifts it to the hard one.
        let r = try runSluice(["run", "--netns", app], in: pair.host, through: ["prlimit", "--nofile=256:20000", "--"], timeout: 60) { process in
            let up = TestNetwork.waitUntil(seconds: 10) {
                (try? net.run(["ip", "-n", self.app, "link", "show", "sluice0"]).status) == 0
            }
            if up {
                limits = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)) ?? ""
                routes = (try? net.run(["ip", "-n", self.app, "route"]).output) ?? ""
                digest = (try? net.run(["sh", "-c", "curl -sS http://10.88.0.2:8080/1m.bin | sha256sum"], in: self.app).output) ?? ""
                resolver = (try? net.run(["cat", "/etc/resolv.conf"], in: self.app).output) ?? ""
            }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(routes.contains("0.0.0.0/1 dev sluice0") && routes.contains("128.0.0.0/1 dev sluice0"), "\(routes)")
        #expect(String(digest.prefix(64)) == expected, "\(digest) \(r.stderr)")
        #expect(resolver.contains("nameserver 10.233.0.53"), "\(resolver)")
        let openFiles = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }?.split(separator: " ", omittingEmptySubsequences: true)
        #expect(openFiles.map { Array($0[3...4]) } == ["20000", "20000"], "\(limits)")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("signal 2: stopping"))
        // Everything Sluice added is gone: the TUN, its routes, the resolv.conf.
        #expect((try net.run(["ip", "-n", app, "link", "show", "sluice0"], check: false)).status != 0)
        #expect(!(try net.run(["ip", "-n", app, "route"]).output).contains("sluice0"))
        #expect(!FileManager.default.fileExists(atPath: "/etc/netns/\(app)"))
    }

    /// A resolv.conf a `run` killed outright left behind (SIGKILL: no
    /// cleanup) is taken over by the next run and removed when it stops; it
    /// used to be taken for the user's own and kept for good, pointing the
    /// namespace's programs at a resolver that was gone.
    @Test func aResolvConfLeftByAKilledRunIsTakenOver() throws {
        let directory = "/etc/netns/\(app)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // (pid 2^22 + 1 is above pid_max's largest value: never a live process.)
        try "# written by sluice run (pid 4194305); removed when it stops\nnameserver 10.233.0.53\n"
            .write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        let r = try runSluice(["run", "--netns", app], in: pair.host, timeout: 60) { process in
            _ = TestNetwork.waitUntil(seconds: 10) { (try? self.pair.net.run(["ip", "-n", self.app, "link", "show", "sluice0"]).status) == 0 }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("was left by a Sluice that is gone; replaced"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/resolv.conf"))
    }

    /// `run --netns NAME --forward`: a server in the namespace Sluice attached
    /// to is reached from Sluice's side (ExecTests tests the same for exec);
    /// with --tun, --forward is refused.
    @Test func forwardReachesAServerInTheAttachedNamespace() throws {
        let net = pair.net
        let expected = try pair.digest("1m.bin")
        try net.start(["python3", "-m", "http.server", "8000", "--directory", pair.work.path], in: app)
        #expect(TestNetwork.waitUntil(seconds: 10) { ((try? net.run(["ss", "-ltnH"], in: self.app).output) ?? "").contains(":8000 ") })
        var digest = ""
        let r = try runSluice(["run", "--netns", app, "--forward", "18090:8000"], in: pair.host, timeout: 60) { process in
            let listening = TestNetwork.waitUntil(seconds: 10) {
                ((try? net.run(["ss", "-ltnH"], in: self.pair.host).output) ?? "").contains("127.0.0.1:18090 ")
            }
            if listening {
                digest = (try? net.run(["sh", "-c", "curl -sS http://127.0.0.1:18090/1m.bin | sha256sum"], in: self.pair.host).output) ?? ""
            }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(String(digest.prefix(64)) == expected, "\(digest) \(r.stderr)")
        #expect(r.status == 0, "\(r.stderr)")
        let refused = try runSluice(["run", "--tun", "--forward", "18091:80"], in: pair.host, timeout: 20)
        #expect(refused.status == 2 && refused.stderr.contains("--forward reaches servers in a namespace"), "\(refused.stderr)")
    }

    @Test func wholeHostModeInANamespaceThatPlaysTheHost() throws {
        // Sluice runs in the host namespace and relays that namespace's own traffic:
        // every unmarked packet is routed into its TUN, its own sockets are marked.
        let net = pair.net, host = pair.host
        let expected = try pair.digest("1m.bin")
        var digest = "", rules = "", pings = ""
        // (With a longer polling window than the default, to run `run`'s --busy-poll too.)
        let r = try runSluice(["run", "--tun", "--busy-poll", "200"], in: host, timeout: 60) { process in
            let up = TestNetwork.waitUntil(seconds: 10) {
                ((try? net.run(["ip", "-n", host, "rule"]).output) ?? "").contains("lookup 2333")
            }
            if up {
                rules = (try? net.run(["ip", "-n", host, "rule"]).output) ?? ""
                digest = (try? net.run(["sh", "-c", "curl -sS http://10.88.0.2:8080/1m.bin | sha256sum"], in: host).output) ?? ""
                // Pings too, both families; then a pause in which nothing should cross the TUN.
                pings = (try? net.run(["sh", "-c", "ping -c 2 -i 0.2 -W 2 10.88.0.2 | grep -o '[0-9]* received'; ping -6 -c 2 -i 0.2 -W 2 fd00:88::2 | grep -o '[0-9]* received'; sleep 1"], in: host, timeout: 20).output) ?? ""
            }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(pings == "2 received\n2 received\n", "\(pings) \(r.stderr)")
        // Sluice's own replies, written into the TUN for the host's address, are not
        // taken by its raw ICMP sockets for replies from the network and written
        // again (that storm wrote 200,000 packets a second): a 1 MiB download and
        // four pings are at most a few hundred packets.
        let written = r.stderr.firstMatch(of: /packets in, (\d+) out/).flatMap { Int($0.1) } ?? -1
        #expect(written > 0 && written < 2000, "\(r.stderr)")
        #expect(rules.contains("100:\tfrom all fwmark 0 lookup 2333"), "\(rules)") // unmarked packets only (ip omits a full mask)
        #expect(String(digest.prefix(64)) == expected, "\(digest) \(r.stderr)")
        #expect(r.stderr.contains("1 TCP flows"), "the download went through Sluice: \(r.stderr)")
        #expect(r.status == 0, "\(r.stderr)")
        // The rules and the TUN are gone; the host namespace routes as before.
        #expect(!(try net.run(["ip", "-n", host, "rule"]).output).contains("2333"))
        #expect((try net.run(["ip", "-n", host, "link", "show", "sluice0"], check: false)).status != 0)
        #expect(String(try net.run(["sh", "-c", "curl -sS http://10.88.0.2:8080/1m.bin | sha256sum"], in: host).output.prefix(64)) == expected)
    }

    /// Whole-host mode on a gateway: a LAN device (the app namespace, behind
    /// the host at 192.168.77.0/24) reaches the server through the host, which
    /// forwards; its packets are unmarked, so they enter Sluice's TUN and are
    /// relayed like the host's own, and `--exclude` for the LAN keeps the
    /// answers on the host's routes back to it. SRC-IP sees the device's
    /// address: the device is refused where the host itself goes through.
    @Test func wholeHostModeRelaysAGatewaysLANDevices() throws {
        let net = pair.net, host = pair.host
        try net.link(host, "hl0", app, "lan0")
        try net.address(host, "hl0", "192.168.77.1/24")
        try net.address(app, "lan0", "192.168.77.2/24")
        try net.run(["ip", "-n", app, "route", "add", "default", "via", "192.168.77.1"])
        try net.run(["ip", "netns", "exec", host, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
        let expected = try pair.digest("1m.bin")
        let profile = pair.path("gateway.conf")
        try "[Rule]\nSRC-IP,192.168.77.3,REJECT-RST\nFINAL,DIRECT\n".write(toFile: profile, atomically: true, encoding: .utf8)
        var device = "", refused = "", own = ""
        let r = try runSluice(["run", "--tun", "--exclude", "192.168.77.0/24", "--profile", profile], in: host, timeout: 60) { process in
            if TestNetwork.waitUntil(seconds: 10, { ((try? net.run(["ip", "-n", host, "rule"]).output) ?? "").contains("lookup 2333") }) {
                device = (try? net.run(["sh", "-c", "curl -sS http://10.88.0.2:8080/1m.bin | sha256sum"], in: self.app).output) ?? ""
                // A second device address on the LAN, which the rule refuses.
                _ = try? net.run(["ip", "-n", self.app, "addr", "add", "192.168.77.3/24", "dev", "lan0"])
                refused = (try? net.run(["sh", "-c", "curl -sS --interface 192.168.77.3 -o /dev/null http://10.88.0.2:8080/1m.bin 2>/dev/null; echo $?"],
                                        in: self.app, check: false).output) ?? ""
                own = (try? net.run(["sh", "-c", "curl -sS http://10.88.0.2:8080/1m.bin | sha256sum"], in: host).output) ?? ""
            }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(String(device.prefix(64)) == expected, "\(device) \(r.stderr)")
        #expect(refused == "7\n", "\(refused) \(r.stderr)")
        #expect(String(own.prefix(64)) == expected, "\(own)")
        #expect(r.stderr.contains("2 TCP flows relayed (besides 0 refused, 1 rejected by rules"), "the device's and the host's downloads went through Sluice: \(r.stderr)")
    }

    /// Owner rules where Sluice does not start the programs: in a namespace it
    /// attached to (the lookups run in that namespace), and in whole-host mode
    /// (in its own, where its own sockets must never be taken for the app's).
    @Test func ownerRulesWorkInAnAttachedNamespaceAndInWholeHostMode() throws {
        let net = pair.net, host = pair.host
        let profile = pair.path("owners.conf")
        try "[Rule]\nPROCESS-NAME,wget,REJECT\nUID,65534,REJECT-RST\nFINAL,DIRECT\n".write(toFile: profile, atomically: true, encoding: .utf8)
        let script = """
        curl -s -o /dev/null -w 'curl %{http_code}\\n' http://10.88.0.2:8080/1m.bin
        wget -q -O /dev/null http://10.88.0.2:8080/1m.bin; echo "wget $?"
        setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -o /dev/null http://10.88.0.2:8080/1m.bin; echo "nobody $?"
        """
        for (arguments, namespace, ready) in [(["run", "--netns", app], app, "sluice0"), (["run", "--tun"], host, "sluice0")] {
            var output = ""
            let r = try runSluice(arguments + ["--profile", profile], in: host, timeout: 60) { process in
                let up = TestNetwork.waitUntil(seconds: 10) {
                    (try? net.run(["ip", "-n", namespace, "link", "show", ready]).status) == 0
                        && (namespace == self.app || ((try? net.run(["ip", "-n", host, "rule"]).output) ?? "").contains("lookup 2333"))
                }
                if up { output = (try? net.run(["bash", "-c", script], in: namespace, check: false).output) ?? "" }
                kill(process.processIdentifier, SIGINT)
            }
            #expect(output == "curl 200\nwget 8\nnobody 7\n" || output == "curl 200\nwget 8\nnobody 56\n", "\(arguments): \(output) \(r.stderr)")
            #expect(r.stderr.contains("owners: 3 flows looked up, 0 not found"), "\(arguments): \(r.stderr)")
            #expect(r.status == 0, "\(r.stderr)")
        }
    }

    /// Whole-host mode after a Sluice killed outright (SIGKILL leaves its
    /// policy-routing rules): the next run takes them over and removes them
    /// when it stops. It failed with a bare EEXIST (and removed them on its
    /// way out, so that only the run after it worked).
    @Test func rulesLeftByAKilledWholeHostRunAreTakenOver() throws {
        let net = pair.net, host = pair.host
        for family in ["-4", "-6"] {
            try net.run(["ip", family, "-n", host, "rule", "add", "fwmark", "0/0xffffffff", "lookup", "2333", "priority", "100"])
        }
        try net.run(["ip", "-n", host, "rule", "add", "to", "10.88.0.2/32", "lookup", "main", "priority", "99"])
        var digest = ""
        let r = try runSluice(["run", "--tun", "--exclude", "10.88.0.2/32"], in: host, timeout: 60) { process in
            let up = TestNetwork.waitUntil(seconds: 10) { (try? net.run(["ip", "-n", host, "link", "show", "sluice0"]).status) == 0 }
            if up { digest = (try? net.run(["sh", "-c", "curl -sS http://[fd00:88::2]:8080/1m.bin | sha256sum"], in: host).output) ?? "" }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(r.status == 0, "\(r.stderr)")
        #expect(String(digest.prefix(64)) == (try pair.digest("1m.bin")), "\(digest) \(r.stderr)")
        let rules = (try net.run(["ip", "-n", host, "rule"]).output) + (try net.run(["ip", "-6", "-n", host, "rule"]).output)
        #expect(!rules.contains("2333") && !rules.contains("10.88.0.2"), "\(rules)")
    }

    /// `--exclude`: an excluded destination keeps the host's own routing, so
    /// a connection made before Sluice (as an SSH session would be) carries
    /// on untouched, and new connections to it skip Sluice; other
    /// destinations (the same server over IPv6) still go through it.
    @Test func excludedDestinationsSkipTheTunInWholeHostMode() throws {
        let net = pair.net, host = pair.host
        let expected = try pair.digest("1m.bin")
        // A connection made before Sluice starts (as an SSH session would be), used again once it runs.
        try net.start(["python3", "-c", """
        import socket
        s = socket.socket(); s.bind(("10.88.0.2", 9400)); s.listen(1); s.settimeout(30)
        c, _ = s.accept(); c.settimeout(30)
        while True:
            data = c.recv(100)
            if not data: break
            c.sendall(data)
        """], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9400"))
        let early = pair.path("early.out"), flag = pair.path("early.go")
        try net.start(["python3", "-c", """
        import socket, os, time
        out = open("\(early)", "w", buffering=1)
        s = socket.create_connection(("10.88.0.2", 9400), timeout=5)
        s.sendall(b"before"); out.write(s.recv(100).decode() + "\\n")
        for _ in range(600):
            if os.path.exists("\(flag)"): break
            time.sleep(0.05)
        try:
            s.sendall(b"after"); out.write((s.recv(100).decode() or "closed") + "\\n")
        except OSError as e:
            out.write("cut: %s\\n" % type(e).__name__)
        """], in: host)
        #expect(TestNetwork.waitUntil(seconds: 10) { ((try? String(contentsOfFile: early, encoding: .utf8)) ?? "") == "before\n" })
        var rules = "", v4 = "", v6 = "", earlyOut = ""
        let r = try runSluice(["run", "--tun", "--exclude", "10.88.0.2/32", "--exclude", "fd00:99::/64"], in: host, timeout: 60) { process in
            let up = TestNetwork.waitUntil(seconds: 10) {
                ((try? net.run(["ip", "-n", host, "rule"]).output) ?? "").contains("lookup 2333")
            }
            if up {
                rules = ((try? net.run(["ip", "-n", host, "rule"]).output) ?? "") + ((try? net.run(["ip", "-n", host, "-6", "rule"]).output) ?? "")
                v4 = (try? net.run(["sh", "-c", "curl -sS http://10.88.0.2:8080/1m.bin | sha256sum"], in: host).output) ?? ""
                v6 = (try? net.run(["sh", "-c", "curl -sS 'http://[fd00:88::2]:8080/1m.bin' | sha256sum"], in: host).output) ?? ""
                _ = FileManager.default.createFile(atPath: flag, contents: nil)
                _ = TestNetwork.waitUntil(seconds: 10) { ((try? String(contentsOfFile: early, encoding: .utf8)) ?? "").split(separator: "\n").count == 2 }
                earlyOut = (try? String(contentsOfFile: early, encoding: .utf8)) ?? ""
            }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(rules.contains("99:\tfrom all to 10.88.0.2 lookup main"), "\(rules)")
        #expect(rules.contains("99:\tfrom all to fd00:99::/64 lookup main"), "\(rules)")
        #expect(r.stderr.contains("10.88.0.2/32, fd00:99::/64 excluded"), "\(r.stderr)")
        #expect(String(v4.prefix(64)) == expected && String(v6.prefix(64)) == expected, "\(v4) \(v6) \(r.stderr)")
        #expect(earlyOut == "before\nafter\n", "the connection made before Sluice still works: \(earlyOut)")
        #expect(r.stderr.contains("1 TCP flows"), "only the IPv6 download went through Sluice: \(r.stderr)")
        #expect(r.status == 0, "\(r.stderr)")
        let after = try net.run(["ip", "-n", host, "rule"]).output + net.run(["ip", "-n", host, "-6", "rule"]).output
        #expect(!after.contains("to 10.88.0.2") && !after.contains("fd00:99::/64") && !after.contains("2333"), "the rules are gone: \(after)")
        // Only whole-host mode takes it, and a prefix with host bits set is refused with the one meant.
        let netns = try runSluice(["run", "--netns", "x", "--exclude", "10.0.0.0/8"], in: host, timeout: 20)
        #expect(netns.status == 2 && netns.stderr.contains("--exclude is for --tun"), "\(netns.stderr)")
        let bits = try runSluice(["run", "--tun", "--exclude", "10.1.2.3/8"], in: host, timeout: 20)
        #expect(bits.status == 2 && bits.stderr.contains("did you mean 10.0.0.0/8?"), "\(bits.stderr)")
    }

    /// `run --tun --dns fake`: every DNS query entering the TUN, whatever
    /// server it was for, is answered by Sluice (fake IPs), over UDP and TCP,
    /// so DOMAIN rules decide in whole-host mode too; Sluice's own lookups
    /// (the fake name's real address) carry its mark and reach the host's
    /// resolver directly. Without --dns the same query reaches that resolver.
    @Test func wholeHostModeAnswersTheHostsDNSQueriesWhenAsked() throws {
        let net = pair.net, host = pair.host
        let expected = try pair.digest("1m.bin")
        try net.start(["dnsmasq", "--no-daemon", "--no-resolv", "--no-hosts", "--bind-interfaces", "--listen-address=10.88.0.2",
                       "--port=53", "--host-record=origin.test,10.88.0.2", "--host-record=blocked.test,10.88.0.2",
                       "--log-facility=/dev/null"], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:53"))
        // The host namespace's resolver is that dnsmasq (`ip netns exec` binds this file, for Sluice too).
        try FileManager.default.createDirectory(atPath: "/etc/netns/\(host)", withIntermediateDirectories: true)
        try "nameserver 10.88.0.2\n".write(toFile: "/etc/netns/\(host)/resolv.conf", atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: "/etc/netns/\(host)") }
        let profile = pair.path("names.conf")
        try "[Rule]\nDOMAIN,blocked.test,REJECT\nFINAL,DIRECT\n".write(toFile: profile, atomically: true, encoding: .utf8)
        var out = ""
        let r = try runSluice(["run", "--tun", "--dns", "fake", "--profile", profile], in: host, timeout: 60) { process in
            if TestNetwork.waitUntil(seconds: 10, { ((try? net.run(["ip", "-n", host, "rule"]).output) ?? "").contains("lookup 2333") }) {
                out = (try? net.run(["sh", "-c", """
                dig +short +tries=1 +time=3 @10.88.0.2 origin.test
                dig +short +tcp +tries=1 +time=3 @10.88.0.2 origin.test
                curl -sS -m 10 http://origin.test:8080/1m.bin | sha256sum | cut -c1-64
                curl -s -m 10 -o /dev/null -w 'blocked: %{http_code}\\n' http://blocked.test:8080/1m.bin
                """], in: host, check: false).output) ?? ""
            }
            kill(process.processIdentifier, SIGINT)
        }
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(out) \(r.stderr)")
        if lines.count == 4 {
            #expect(lines[0].hasPrefix("198.18.") && lines[1] == lines[0], "answered by Sluice, UDP and TCP alike: \(out)")
            #expect(lines[2] == expected, "the fake address reaches the real server: \(out) \(r.stderr)")
            // REJECT answers an HTTP request with 403 (docs/profile.md).
            #expect(lines[3] == "blocked: 403", "the DOMAIN rule saw the name: \(out) \(r.stderr)")
        }
        #expect(r.stderr.contains("DNS queries to port 53 answered by Sluice (fake)"), "\(r.stderr)")
        #expect(r.status == 0, "\(r.stderr)")
        // By default whole-host mode leaves DNS alone: the query reaches dnsmasq.
        var plain = ""
        _ = try runSluice(["run", "--tun"], in: host, timeout: 60) { process in
            if TestNetwork.waitUntil(seconds: 10, { ((try? net.run(["ip", "-n", host, "rule"]).output) ?? "").contains("lookup 2333") }) {
                plain = (try? net.run(["dig", "+short", "+tries=1", "+time=3", "@10.88.0.2", "origin.test"], in: host, check: false).output) ?? ""
            }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(plain == "10.88.0.2\n", "\(plain)")
    }

    /// --tun, --netns and --pid name where Sluice attaches: two of them are
    /// a usage error, before anything is made. (With --tun and a mistyped
    /// --netns, the host's own namespace was taken over.)
    @Test func twoNamespacesAreAUsageError() throws {
        for arguments in [["--netns", "no-such-namespace", "--tun"], ["--tun", "--pid", "1"], ["--netns", "a", "--pid", "1"], ["--netns", "a", "--netns", "b"]] {
            let r = try runSluice(["run"] + arguments, in: pair.host, timeout: 20)
            #expect(r.status == 2, "\(arguments): \(r.stderr)")
            #expect(r.stderr.contains("give one of --netns, --pid"), "\(arguments): \(r.stderr)")
            // Nothing was made in the host's namespace.
            #expect(!(try pair.net.run(["ip", "-n", pair.host, "rule"]).output).contains("2333"))
        }
    }

    @Test func aMissingNamespaceIsAClearError() throws {
        let r = try runSluice(["run", "--netns", "no-such-namespace-\(getpid())"], in: pair.host, timeout: 20)
        #expect(r.status == 1)
        #expect(r.stderr.contains("opening network namespace no-such-namespace"), "\(r.stderr)")
        #expect(r.stderr.contains("`ip netns list` shows the names"), "\(r.stderr)")
        // Said first: the control socket's line came before it.
        #expect(!r.stderr.contains("control"), "\(r.stderr)")
        // A folder, or a namespace of another kind, is named for what it is (it was a bare EINVAL).
        for file in [pair.work.path, "/proc/self/ns/uts"] {
            let wrong = try runSluice(["run", "--netns", file], in: pair.host, timeout: 20)
            #expect(wrong.status == 2 && wrong.stderr.contains("\(file) is not a network namespace"), "\(wrong.stderr)")
        }
    }
}
