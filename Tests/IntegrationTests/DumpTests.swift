import Foundation
import Testing
import TestSupport

/// `sluice dump` end to end, as root: the real binary, a real namespace, real
/// ping and curl. Each test checks that the namespace is gone afterwards.
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces and TUN devices"), .serialized)
struct DumpTests {
    func leftoverNamespaces() throws -> [String] {
        let listing = try TestNetwork("dump").run(["ip", "netns", "list"]).output
        return listing.split(separator: "\n").map(String.init).filter { $0.hasPrefix("sluice-dump-") }
    }

    @Test func printsPingsLikeTcpdumpAndAnswersThem() throws {
        let r = try runSluice(["dump", "--seconds", "20", "--", "ping", "-c", "2", "-i", "0.2", "-W", "2", "10.233.0.2"])
        #expect(r.status == 0, "ping must get its replies: \(r.stderr)")
        let requests = r.stdout.split(separator: "\n").filter { $0.contains("IP 10.233.0.1 > 10.233.0.2: ICMP echo request") }
        #expect(requests.count == 2, "\(r.stdout)")
        #expect(requests.first?.hasSuffix("seq 1, length 64") == true)
        #expect(r.stdout.contains("2 packets transmitted, 2 received"))
        #expect(r.stderr.contains("2 pings answered"))
        #expect(try leftoverNamespaces().isEmpty)
    }

    @Test func printsIPv6AndTCP() throws {
        let r = try runSluice(["dump", "--seconds", "20", "--", "bash", "-c",
                         "ping -6 -c 1 -W 2 fd00:233::2 && curl -s -m 1 http://10.233.0.2:8080/; true"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("IP6 fd00:233::1 > fd00:233::2: ICMP6, echo request"), "\(r.stdout)")
        #expect(r.stdout.contains("> 10.233.0.2.8080: Flags [S], seq "), "\(r.stdout)")
        #expect(r.stdout.contains("options [mss 1460,sackOK,TS val"), "\(r.stdout)")
    }

    @Test func decodesDNSQueries() throws {
        let r = try runSluice(["dump", "--seconds", "20", "--", "bash", "-c",
                         "dig +tries=1 +time=1 @10.233.0.53 api.sluice.test AAAA; true"])
        #expect(r.stdout.contains("> 10.233.0.53.53: "), "\(r.stdout)")
        #expect(r.stdout.contains("AAAA? api.sluice.test."), "\(r.stdout)")
    }

    @Test func exitsWithTheCommandsStatus() throws {
        #expect(try runSluice(["dump", "--", "sh", "-c", "exit 7"]).status == 7)
        #expect(try runSluice(["dump", "--", "sh", "-c", "kill -KILL $$"]).status == 128 + 9)
        #expect(try leftoverNamespaces().isEmpty)
    }

    @Test func stopsAfterCountPackets() throws {
        let r = try runSluice(["dump", "--count", "3", "--", "ping", "-i", "0.2", "10.233.0.2"])
        // Every packet line starts with its time; the router solicitation counts too.
        let packets = r.stdout.split(separator: "\n").filter { $0.first?.isNumber == true && $0.contains(" > ") }
        #expect(packets.count == 3, "\(r.stdout)")
        #expect(r.stderr.contains("3 packets"))
        #expect(try leftoverNamespaces().isEmpty)
    }

    @Test func cleansUpOnCtrlC() throws {
        let r = try runSluice(["dump", "--", "sleep", "61.25"], timeout: 20) { process in
            // Wait until the namespace exists, then interrupt.
            _ = TestNetwork.waitUntil(seconds: 10) { (try? self.leftoverNamespaces().isEmpty) == false }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(r.status == 128 + SIGINT)
        #expect(r.stdout.contains("signal 2: stopping"))
        #expect(try leftoverNamespaces().isEmpty)
        // The sleep we started through sluice is gone too.
        // Its own child, by a command line no other test uses; reaping may lag a moment under load.
        let gone = TestNetwork.waitUntil(seconds: 5) {
            ((try? TestNetwork("dump").run(["pgrep", "-f", "^sleep 61.25$"], check: false).status) ?? 0) != 0
        }
        let survivors = (try? TestNetwork("dump").run(["ps", "-o", "pid,ppid,stat,args", "-C", "sleep"], check: false).output) ?? ""
        #expect(gone, "the command survived Sluice: \(survivors)")
    }

    @Test func refusesBadUsageWithAHint() throws {
        let r = try runSluice(["dump", "--count", "zero", "--", "true"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("--count wants a positive whole number, got 'zero'"))
        let none = try runSluice(["dump"])
        #expect(none.status == 2)
        #expect(none.stderr.contains("no command given; for example: sluice dump -- ping"))
    }
}
