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
        var digest = "", rules = ""
        // (With a longer polling window than the default, to run `run`'s --busy-poll too.)
        let r = try runSluice(["run", "--tun", "--busy-poll", "200"], in: host, timeout: 60) { process in
            let up = TestNetwork.waitUntil(seconds: 10) {
                ((try? net.run(["ip", "-n", host, "rule"]).output) ?? "").contains("lookup 2333")
            }
            if up {
                rules = (try? net.run(["ip", "-n", host, "rule"]).output) ?? ""
                digest = (try? net.run(["sh", "-c", "curl -sS http://10.88.0.2:8080/1m.bin | sha256sum"], in: host).output) ?? ""
            }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(rules.contains("100:\tfrom all fwmark 0 lookup 2333"), "\(rules)") // unmarked packets only (ip omits a full mask)
        #expect(String(digest.prefix(64)) == expected, "\(digest) \(r.stderr)")
        #expect(r.stderr.contains("1 TCP flows"), "the download went through Sluice: \(r.stderr)")
        #expect(r.status == 0, "\(r.stderr)")
        // The rules and the TUN are gone; the host namespace routes as before.
        #expect(!(try net.run(["ip", "-n", host, "rule"]).output).contains("2333"))
        #expect((try net.run(["ip", "-n", host, "link", "show", "sluice0"], check: false)).status != 0)
        #expect(String(try net.run(["sh", "-c", "curl -sS http://10.88.0.2:8080/1m.bin | sha256sum"], in: host).output.prefix(64)) == expected)
    }

    @Test func aMissingNamespaceIsAClearError() throws {
        let r = try runSluice(["run", "--netns", "no-such-namespace-\(getpid())"], in: pair.host, timeout: 20)
        #expect(r.status == 1)
        #expect(r.stderr.contains("opening network namespace no-such-namespace"), "\(r.stderr)")
    }
}
