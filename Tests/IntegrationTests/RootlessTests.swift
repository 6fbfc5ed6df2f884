import Foundation
import Testing
import TestSupport

/// `sluice exec` and `sluice dump` started by an unprivileged user (nobody):
/// the command's namespace is made in a user namespace, as slirp4netns and
/// pasta do for rootless containers, and Sluice relays from the host
/// namespace as that user. The host namespace is the test's own; Sluice
/// runs there in a mount namespace of its own in which /dev/net/tun is a
/// node the test made with the mode it wants (Debian's udev gives the real
/// one 0666; these test machines keep it 0600), so nothing of the
/// machine's changes.
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces and device nodes"), .serialized)
final class RootlessTests {
    let pair: ServerPair
    var net: TestNetwork { pair.net }
    var host: String { pair.host }
    /// nobody's folder for what the test's commands write, and its XDG_RUNTIME_DIR.
    let shared: String
    let runtime: String

    init() throws {
        pair = try ServerPair("userns")
        shared = pair.path("shared")
        runtime = pair.path("runtime")
        try pair.makeFile("1m.bin", bytes: 1_048_576)
        for (name, mode) in [("tun-open", "0666"), ("tun-closed", "0600")] {
            try net.run(["mknod", "-m", mode, pair.path(name), "c", "10", "200"])
        }
        for dir in [shared, runtime] {
            try net.run(["mkdir", "-m", "0700", dir])
            try net.run(["chown", "nobody:nogroup", dir])
        }
        try pair.path("profile.conf").write(profile: """
        [Rule]
        PROCESS-NAME,curl,REJECT-RST
        FINAL,DIRECT

        [Host]
        web.sluice.test = 10.88.0.2
        """)
        // Ping sockets for every group, in the test's host namespace only (Debian's systemd does this on real hosts).
        try net.run(["sysctl", "-q", "-w", "net.ipv4.ping_group_range=0 2147483647"], in: host)
    }

    /// Runs sluice as nobody in the host namespace, with `device` bound on /dev/net/tun.
    func asNobody(_ arguments: [String], device: String = "tun-open", environment: [String] = [], timeout: Double = 60,
                  whileRunning: ((Process) -> Void)? = nil) throws -> SluiceRun {
        let through = ["unshare", "-m", "--propagation", "private", "sh", "-c", "mount --bind \"$0\" /dev/net/tun && exec \"$@\"",
                       pair.path(device), "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        return try runSluice(arguments, in: host, environment: ["XDG_RUNTIME_DIR=\(runtime)"] + environment, through: through,
                             timeout: timeout, whileRunning: whileRunning)
    }

    func leftovers() throws -> [String] {
        try net.run(["ls", "-A", runtime + "/sluice"], check: false).output.split(separator: "\n").map(String.init)
    }

    @Test func anUnprivilegedUserRelaysTCPAndPingOverBothFamilies() throws {
        let digest = try pair.digest("1m.bin")
        let r = try asNobody(["exec", "--profile", pair.path("profile.conf"), "--", "bash", "-c", """
            id -u; id -g
            curl -sS http://web.sluice.test:8080/1m.bin -o /dev/null; echo curl $?
            wget -q -O - http://web.sluice.test:8080/1m.bin | sha256sum | cut -c1-64
            wget -q -O - 'http://[fd00:88::2]:8080/1m.bin' | sha256sum | cut -c1-64
            ping -c 2 -i 0.2 -W 2 10.88.0.2 | grep -o '2 received'
            ping -6 -c 2 -i 0.2 -W 2 fd00:88::2 | grep -o '2 received'
            """])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        // The command is nobody too; the profile's owner rule saw curl (the kernel's socket table, from inside).
        #expect(r.stdout.split(separator: "\n").map(String.init) == ["65534", "65534", "curl 7", digest, digest, "2 received", "2 received"],
                "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("2 ping flows"), "\(r.stderr)")
        #expect(try leftovers() == [], "the resolv.conf and control socket are removed")
    }

    /// Without root Sluice pings through ping sockets, which hear a router's
    /// errors only on their error queue (IP_RECVERR): ping prints the
    /// router's line over both families, as it would without Sluice, where
    /// before it waited out its timeout; `-t 1` runs out at the router; and
    /// a ping the host has no route for hears net unreachable.
    @Test func pingsHearARoutersUnreachableWithoutRoot() throws {
        let srv = pair.server
        try net.run(["sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"], in: srv)
        try net.run(["ip", "route", "add", "unreachable", "10.66.1.0/24"], in: srv)
        try net.run(["ip", "-6", "route", "add", "unreachable", "fd66:1::/32"], in: srv)
        try net.run(["ip", "route", "add", "10.66.3.0/24", "via", "10.88.0.1"], in: srv)
        try net.run(["ip", "route", "add", "10.66.0.0/16", "via", "10.88.0.2"], in: host)
        try net.run(["ip", "-6", "route", "add", "fd66::/16", "via", "fd00:88::2"], in: host)
        let r = try asNobody(["exec", "--", "bash", "-c", """
            ping -n -c1 -W3 10.66.1.9 | grep -o 'From .*'
            ping -n -c1 -W3 fd66:1::9 | grep -o 'From .*'
            ping -n -c1 -W3 -t 1 10.66.3.9 | grep -o 'From .*'
            ping -n -c1 -W3 10.123.0.9 | grep -o 'From .*'
            """])
        #expect(r.stdout.split(separator: "\n").map(String.init) == [
            "From 10.88.0.2 icmp_seq=1 Destination Host Unreachable",
            "From fd00:88::2 icmp_seq=1 Destination unreachable: No route",
            "From 10.88.0.2 icmp_seq=1 Time to live exceeded",
            "From 10.123.0.9 icmp_seq=1 Destination Net Unreachable",
        ], "\(r.stdout) \(r.stderr)")
    }

    @Test func theCommandGetsSluicesDNSAndItsExitStatus() throws {
        let r = try asNobody(["exec", "--profile", pair.path("profile.conf"), "--", "bash", "-c",
                              "grep -c 10.233.0.53 /etc/resolv.conf; getent hosts web.sluice.test; exit 3"])
        #expect(r.status == 3, "\(r.stdout) \(r.stderr)")
        #expect(r.stdout.split(separator: "\n").map(String.init) == ["1", "10.88.0.2       web.sluice.test"], "\(r.stdout) \(r.stderr)")
        let killed = try asNobody(["exec", "--", "bash", "-c", "kill -KILL $$"])
        #expect(killed.status == 128 + 9, "\(killed.stderr)")
        #expect(try leftovers() == [])
        // No named namespace was made (the user namespace dies with the command).
        let names = try net.run(["ip", "netns", "list"]).output
        #expect(!names.contains("sluice-exec-\(r.pid)") && !names.contains("sluice-exec-\(killed.pid)"), "\(names)")
    }

    /// SIGTERM to Sluice ends the command too; its files go.
    @Test func aStopSignalEndsTheCommandAndCleansUp() throws {
        let pidFile = shared + "/command.pid"
        let r = try asNobody(["exec", "--", "bash", "-c", "echo $$ > \(pidFile); exec sleep 30"], timeout: 30) { process in
            _ = TestNetwork.waitUntil(seconds: 10) { FileManager.default.fileExists(atPath: pidFile) }
            kill(process.processIdentifier, SIGTERM)
        }
        #expect(r.status == 128 + SIGTERM, "\(r.stderr)")
        #expect(r.seconds < 10)
        let pid = Int32((try? String(contentsOfFile: pidFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        #expect(pid > 0)
        #expect(TestNetwork.waitUntil(seconds: 5) { kill(pid, 0) != 0 }, "the command \(pid) still runs")
        #expect(try leftovers() == [])
    }

    /// A Sluice killed outright (no cleanup of its own) takes the command with
    /// it: SIGTERM by PR_SET_PDEATHSIG, as when Sluice stops itself.
    @Test func aKilledSluiceTakesTheCommandWithIt() throws {
        let pidFile = shared + "/killed-command.pid"
        let r = try asNobody(["exec", "--", "bash", "-c", "echo $$ > \(pidFile); exec sleep 30"], timeout: 30) { process in
            _ = TestNetwork.waitUntil(seconds: 10) { FileManager.default.fileExists(atPath: pidFile) }
            kill(process.processIdentifier, SIGKILL)
        }
        #expect(r.status == SIGKILL, "\(r.stderr)") // Foundation reports the signal itself
        let pid = Int32((try? String(contentsOfFile: pidFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        #expect(pid > 0)
        #expect(TestNetwork.waitUntil(seconds: 5) { kill(pid, 0) != 0 }, "the command \(pid) still runs")
    }

    /// The control API answers the user at $XDG_RUNTIME_DIR/sluice/control.sock.
    @Test func theControlSocketIsInTheUsersRuntimeFolder() throws {
        let status = pair.path("shared/status.txt")
        let r = try asNobody(["exec", "--", "bash", "-c",
                              "curl -s http://10.88.0.2:8080/1m.bin -o /dev/null; XDG_RUNTIME_DIR=\(runtime) sluice_bin=\(sluiceBinary); "
                              + "$sluice_bin status > \(status) 2>&1; echo $?"])
        #expect(r.status == 0, "\(r.stderr)")
        // The command is inside the tunnel, but the socket is a file: it reaches Sluice all the same.
        #expect(r.stdout == "0\n", "\(r.stdout) \((try? String(contentsOfFile: status, encoding: .utf8)) ?? "")")
        let said = (try? String(contentsOfFile: status, encoding: .utf8)) ?? ""
        #expect(said.contains("1 TCP flows relayed"), "\(said)")
    }

    /// `--root`: the command is root in its user namespace (as in a rootless
    /// container): it administers its own network and binds port 80, and
    /// what it writes is nobody's outside.
    @Test func theCommandCanBeRootOfItsOwnNamespace() throws {
        let file = shared + "/made-as-root"
        let r = try asNobody(["exec", "--root", "--", "bash", "-c", """
            id -u; ip addr add 192.0.2.9/32 dev lo && echo admin
            python3 -c 'import socket; s = socket.socket(); s.bind(("10.233.0.1", 80)); print("bound 80")'
            touch \(file); stat -c %u \(file)
            """])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "0\nadmin\nbound 80\n0\n", "\(r.stdout) \(r.stderr)")
        #expect(try net.run(["stat", "-c", "%U", file]).output == "nobody\n")
        // Without --root, the same command is nobody and may do neither.
        let plain = try asNobody(["exec", "--", "bash", "-c", "id -u; ip addr add 192.0.2.9/32 dev lo 2>/dev/null || echo refused"])
        #expect(plain.stdout == "65534\nrefused\n", "\(plain.stdout) \(plain.stderr)")
    }

    /// `--forward` publishes the command's server on the host namespace's
    /// loopback, as rootless containers publish ports.
    @Test func forwardedPortsReachTheCommandsServer() throws {
        try "from-inside\n".write(toFile: shared + "/index.html", atomically: true, encoding: .utf8)
        try net.run(["chown", "nobody:nogroup", shared + "/index.html"])
        var fetched = ""
        let r = try asNobody(["exec", "--forward", "18080:8000", "--", "bash", "-c",
                              "cd \(shared) && exec timeout 20 python3 -m http.server 8000 --bind 10.233.0.1"], timeout: 40) { process in
            _ = TestNetwork.waitUntil(seconds: 15) {
                fetched = (try? self.net.run(["curl", "-s", "--max-time", "2", "http://127.0.0.1:18080/index.html"], in: self.host, check: false).output) ?? ""
                return fetched == "from-inside\n"
            }
            kill(process.processIdentifier, SIGTERM)
        }
        #expect(fetched == "from-inside\n", "\(r.stderr)")
        #expect(r.status == 128 + SIGTERM, "\(r.stderr)")
        // --forward auto finds the port itself, through the helper's sock_diag socket.
        var found = ""
        let auto = try asNobody(["exec", "--forward", "auto", "--", "bash", "-c",
                                 "cd \(shared) && exec timeout 20 python3 -m http.server 18001"], timeout: 40) { process in
            _ = TestNetwork.waitUntil(seconds: 15) {
                found = (try? self.net.run(["curl", "-s", "--max-time", "1", "http://127.0.0.1:18001/index.html"], in: self.host, check: false).output) ?? ""
                return found == "from-inside\n"
            }
            kill(process.processIdentifier, SIGTERM)
        }
        #expect(found == "from-inside\n", "\(auto.stderr)")
    }

    /// Without root too, the command waits for the tunnel: the offload is
    /// on from its first instruction, and a failed start never runs it.
    @Test func theCommandStartsOnlyOnceTheTunnelRuns() throws {
        let offload = try asNobody(["exec", "--", "sh", "-c", "ethtool -k sluice0 | grep -o 'tx-checksum-ip-generic: [a-z]*'"])
        #expect(offload.stdout == "tx-checksum-ip-generic: on\n", "\(offload.stdout) \(offload.stderr)")
        try net.start(["python3", "-c", "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',18092)); s.listen(); time.sleep(60)"], in: host)
        #expect(TestNetwork.waitUntil { ((try? self.net.run(["ss", "-ltnH"], in: self.host).output) ?? "").contains("127.0.0.1:18092") })
        let ran = shared + "/ran"
        let failed = try asNobody(["exec", "--forward", "127.0.0.1:18092:80", "--", "touch", ran])
        #expect(failed.status == 1, "\(failed.stderr)")
        #expect(failed.stderr.contains("EADDRINUSE"), "\(failed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ran), "the command ran: \(failed.stderr)")
    }

    /// A process in a network namespace of its own (made by `unshare`, as
    /// `user`), once its namespace is no longer the host's.
    func namespaceHolder(as user: [String]) throws -> Int32 {
        let unshare = user.isEmpty ? ["unshare", "--net", "sleep", "60"] : user + ["unshare", "--user", "--net", "--map-current-user", "sleep", "60"]
        let holder = try net.start(unshare, in: host)
        let hostNamespace = try net.run(["readlink", "/proc/self/ns/net"], in: host).output
        #expect(TestNetwork.waitUntil(seconds: 10) {
            let theirs = (try? self.net.run(["readlink", "/proc/\(holder.pid)/ns/net"], check: false).output) ?? ""
            return !theirs.isEmpty && theirs != hostNamespace
        })
        return holder.pid
    }

    /// `run --pid PID` attaches to that process's namespace and relays it
    /// until stopped, then takes everything away; `fetch` runs inside it.
    func attach(_ pid: Int32, as user: [String], enter: [String]) throws -> (run: SluiceRun, fetched: String, during: String, after: String) {
        let digest = try pair.digest("1m.bin")
        var fetched = "", during = ""
        let inside = user + ["nsenter", "-t", "\(pid)"] + enter
        let arguments = ["run", "--pid", "\(pid)", "--dns", "off"]
        let body: (Process) -> Void = { process in
            _ = TestNetwork.waitUntil(seconds: 15) {
                fetched = (try? self.net.run(inside + ["sh", "-c", "curl -s --max-time 2 http://10.88.0.2:8080/1m.bin | sha256sum | cut -c1-64"],
                                            in: self.host, check: false).output) ?? ""
                return fetched == digest + "\n"
            }
            during = (try? self.net.run(inside + ["ip", "-br", "addr"], in: self.host, check: false).output) ?? ""
            kill(process.processIdentifier, SIGTERM)
        }
        let r = user.isEmpty ? try runSluice(arguments, in: host, timeout: 40, whileRunning: body)
            : try asNobody(arguments, timeout: 40, whileRunning: body)
        let after = (try? net.run(inside + ["ip", "-br", "link"], in: host, check: false).output) ?? ""
        #expect(fetched == digest + "\n", "\(r.stderr)")
        return (r, fetched, during, after)
    }

    /// Without root, `run --pid` attaches to a namespace of the user's own,
    /// as slirp4netns does for a rootless container: a helper joins it
    /// through the user namespace that owns it.
    @Test func runAttachesToAUsersOwnNamespaceWithoutRoot() throws {
        let nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        let pid = try namespaceHolder(as: nobody)
        let attached = try attach(pid, as: nobody, enter: ["-U", "-n", "--preserve-credentials"])
        #expect(attached.run.status == 0, "\(attached.run.stderr)")
        #expect(attached.during.contains("sluice0") && attached.during.contains("10.233.0.1/24"), "\(attached.during)")
        #expect(!attached.after.contains("sluice0") && attached.after.contains("lo"), "the TUN goes with Sluice: \(attached.after)")
        // A namespace that is not nobody's (root made it) is refused, in one line.
        let roots = try namespaceHolder(as: [])
        let refused = try asNobody(["run", "--pid", "\(roots)", "--dns", "off"])
        #expect(refused.status == 1)
        #expect(refused.stderr == "sluice: error: run: the network namespace /proc/\(roots)/ns/net is not this user's (its user namespace is "
            + "another user's, or the host's), so only root can attach to it: run sluice as root\n", "\(refused.stderr)")
    }

    /// As root, any process's namespace.
    @Test func runAttachesToAProcesssNamespaceAsRoot() throws {
        let pid = try namespaceHolder(as: [])
        let attached = try attach(pid, as: [], enter: ["-n"])
        #expect(attached.run.status == 0, "\(attached.run.stderr)")
        #expect(attached.during.contains("sluice0"), "\(attached.during)")
        #expect(!attached.after.contains("sluice0"), "\(attached.after)")
    }

    /// Without a TUN device this user may open, exec and dump say so in one line; run still needs root.
    @Test func withoutTheTunDeviceTheUserIsToldWhy() throws {
        for command in ["exec", "dump"] {
            let r = try asNobody([command, "--", "true"], device: "tun-closed")
            #expect(r.status == 1, "\(command): \(r.stderr)")
            #expect(r.stderr == "sluice: error: \(command): /dev/net/tun is not open to this user, so without root sluice cannot make its TUN "
                + "(Debian's udev rule gives the device mode 0666; on this machine it has less): run sluice as root, or chmod 0666 /dev/net/tun\n",
                "\(r.stderr)")
        }
        #expect(try leftovers() == [])
    }

    @Test func dumpPrintsAnUnprivilegedCommandsPackets() throws {
        let r = try asNobody(["dump", "--count", "50", "--", "bash", "-c", "ping -c 1 -W 1 10.99.0.9 > /dev/null; exit 4"])
        #expect(r.status == 4, "\(r.stderr)")
        #expect(r.stdout.contains("IP 10.233.0.1 > 10.99.0.9: ICMP echo request"), "\(r.stdout)")
    }
}

private extension String {
    func write(profile text: String) throws {
        try text.write(toFile: self, atomically: true, encoding: .utf8)
    }
}
