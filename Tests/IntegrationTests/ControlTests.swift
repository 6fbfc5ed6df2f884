import Foundation
import Testing
import TestSupport

/// The control API of a running `sluice exec`, through the `sluice` clients:
/// flows, status, groups and selection, reload, closing a flow, and the
/// socket's permission (an unprivileged user cannot connect).
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces and TUN devices"), .serialized)
final class ControlTests {
    let pair: ServerPair
    var work: URL { pair.work }
    let socket: String
    /// The flow the test closed, and the flow list just after: printed if the download was not cut short.
    var closed = ""

    init() throws {
        let pair = try ServerPair("control")
        try pair.makeFile("4m.bin", bytes: 4 << 20)
        try "hello\n".write(to: pair.work.appendingPathComponent("hello.txt"), atomically: true, encoding: .utf8)
        self.pair = pair
        socket = pair.work.appendingPathComponent("control.sock").path
    }

    /// `sluice ARGS --control SOCKET` from the test's own namespace (a path socket reaches across namespaces).
    func control(_ arguments: [String]) throws -> SluiceRun {
        try runSluice(arguments + ["--control", socket], timeout: 15)
    }

    /// The same client as the user nobody, with no groups.
    func controlAsNobody(_ arguments: [String]) throws -> SluiceRun {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = ["--reuid=nobody", "--regid=nogroup", "--clear-groups", sluiceBinary] + arguments + ["--control", socket]
        let err = Pipe(), out = Pipe()
        p.standardError = err
        p.standardOutput = out
        try p.run()
        let deadline = Date().addingTimeInterval(15)
        while p.isRunning, Date() < deadline { usleep(20_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        return SluiceRun(pid: p.processIdentifier, status: p.terminationStatus,
                         stdout: String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                         stderr: String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), seconds: 0)
    }

    func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    @Test func flowsStatusGroupsReloadAndClose() throws {
        let profileText = """
        [Proxy Group]
        Choice = select, DIRECT, REJECT-RST

        [Rule]
        DOMAIN,origin.test,Choice
        FINAL,DIRECT

        [Host]
        origin.test = 10.88.0.2
        """
        let profile = work.appendingPathComponent("control.conf").path
        try profileText.write(toFile: profile, atomically: true, encoding: .utf8)
        let go = work.appendingPathComponent("go").path
        // A slow download holds a flow open; once the test says go, origin.test is tried through the group.
        // 4 MiB at 100 kB/s would take 40 s (not curl --limit-rate, which can burst: ServerPair.slowDownload).
        let slow = try pair.slowDownload("http://10.88.0.2:8080/4m.bin", bytesPerSecond: 100_000, seconds: 45)
        let script = """
        curl -s -o /dev/null -w 'before %{http_code}\\n' http://origin.test:8080/hello.txt
        \(slow) & slow=$!
        for i in $(seq 400); do [ -e \(go) ] && break; sleep 0.1; done
        curl -s -o /dev/null -w 'after %{http_code}\\n' http://origin.test:8080/hello.txt
        wait $slow; echo "download=$?"
        """
        var checked = false
        let r = try runSluice(["exec", "--profile", profile, "--control", socket, "--", "bash", "-c", script], in: pair.host,
                              timeout: 90) { _ in
            defer { _ = FileManager.default.createFile(atPath: go, contents: nil) }
            do { try self.checkWhileRunning(profile: profile, profileText: profileText) } catch {
                Issue.record("\(error)")
                return
            }
            checked = true
        }
        #expect(checked)
        finish(r)
    }

    func checkWhileRunning(profile: String, profileText: String) throws {
        do {
            // The download appears in the flow list, with bytes coming down.
            var download: [String: Any]?
            for _ in 0 ..< 100 {
                let flows = (try? self.control(["flows", "--json"]))?.stdout ?? ""
                let list = self.json(flows)["flows"] as? [[String: Any]] ?? []
                // More than the hello response (a few hundred bytes), whose flow may still be listed.
                download = list.first { ($0["destination-port"] as? Int) == 8080 && ($0["bytes-down"] as? Int ?? 0) > 4096 }
                if download != nil { break }
                usleep(100_000)
            }
            guard let download, let id = download["id"] as? Int else {
                Issue.record("the download never showed up in /flows")
                return
            }
            #expect(download["transport"] as? String == "TCP")
            #expect(download["destination-address"] as? String == "10.88.0.2")
            #expect(download["state"] as? String == "ESTABLISHED")
            // What the rules decided, and since when (the tunnel's flow record).
            #expect(download["policy"] as? String == "DIRECT", "\(download)")
            #expect((download["rule"] as? String)?.hasPrefix("\(profile):") == true, "\(download)")
            #expect((download["age-seconds"] as? Double ?? 0) > 0, "\(download)")
            #expect((download["age-seconds"] as? Double ?? 99) < 30, "\(download)")
            #expect(download["bytes-up"] as? Int ?? 0 > 0, "the request went up: \(download)")

            let table = try self.control(["flows"])
            #expect(table.status == 0, "\(table.stderr)")
            #expect(table.stdout.hasPrefix("ID  "), "\(table.stdout)")
            #expect(table.stdout.contains("10.88.0.2.8080"), "\(table.stdout)")
            #expect(table.stdout.contains("ESTABLISHED"), "\(table.stdout)")

            let status = try self.control(["status"])
            #expect(status.status == 0, "\(status.stderr)")
            #expect(status.stdout.contains("profile \(profile)"), "\(status.stdout)")
            #expect(status.stdout.contains("open: 1 TCP flows relayed upstream, 0 being sniffed"), "\(status.stdout)")
            #expect(status.stdout.contains("Choice (select): *DIRECT, REJECT-RST"), "\(status.stdout)")
            // Not a terminal here: `top` prints its frames one after another, without escape codes.
            let top = try self.control(["top", "--interval", "0.1", "--count", "2"])
            #expect(top.status == 0, "\(top.stderr)")
            #expect(!top.stdout.contains("\u{1B}"), "\(top.stdout)")
            #expect(top.stdout.components(separatedBy: "open: 1 TCP flows relayed upstream").count == 3, "\(top.stdout)")
            // Under the flows, what finished last: the first request's connection, at least.
            #expect(top.stdout.components(separatedBy: "finished last:").count == 3, "\(top.stdout)")
            #expect(top.stdout.contains(" TCP 10.233.0.1."), "\(top.stdout)")
            let stats = self.json(try self.control(["status", "--json"]).stdout)
            let tunnel = (stats["stats"] as? [String: Any])?["tunnel"] as? [String: Any] ?? [:]
            #expect(tunnel["tcp-flows"] as? Int ?? 0 >= 2, "\(stats)")
            #expect(tunnel["bytes-to-app"] as? Int ?? 0 > 0, "\(stats)")

            // Not root: the kernel refuses the connection, and the message says why.
            let nobody = try self.controlAsNobody(["status"])
            #expect(nobody.status == 1)
            #expect(nobody.stderr.contains("permission denied on the control socket \(self.socket) (EACCES)"), "\(nobody.stderr)")
            #expect(nobody.stdout.isEmpty)

            // Switching the group; a member it does not have is refused.
            let select = try self.control(["select", "Choice", "REJECT-RST"])
            #expect(select.status == 0, "\(select.stderr)")
            #expect(select.stdout.contains("Choice: DIRECT → REJECT-RST"), "\(select.stdout)")
            let wrong = try self.control(["select", "Choice", "Nope"])
            #expect(wrong.status == 1)
            #expect(wrong.stderr.contains("'Nope' is not a member of 'Choice'"), "\(wrong.stderr)")

            // Reload keeps the selection; a profile with errors is refused with its errors.
            let reload = try self.control(["reload"])
            #expect(reload.status == 0, "\(reload.stderr)")
            #expect(reload.stdout.contains("reloaded \(profile)"), "\(reload.stdout)")
            #expect(try self.control(["status"]).stdout.contains("Choice (select): DIRECT, *REJECT-RST"))
            try (profileText + "\nbroken line\n").write(toFile: profile, atomically: true, encoding: .utf8)
            let bad = try self.control(["reload"])
            #expect(bad.status == 1)
            #expect(bad.stderr.contains("still using the previous profile"), "\(bad.stderr)")
            #expect(bad.stderr.contains("control.conf:"), "\(bad.stderr)")
            try profileText.write(toFile: profile, atomically: true, encoding: .utf8)

            // Closing the download: the app's connection is reset.
            let close = try self.control(["close", String(id)])
            #expect(close.status == 0, "\(close.stderr)")
            #expect(close.stdout.contains("flow \(id) closed"), "\(close.stdout) \(download)")
            closed = "closed \(download); then \((try? self.control(["flows", "--json"]))?.stdout ?? "")"
            let again = try self.control(["close", String(id)])
            #expect(again.status == 1)
            #expect(again.stderr.contains("no open flow with id \(id)"), "\(again.stderr)")
        }
    }

    func finish(_ r: SluiceRun) {
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "before 200", "\(r.stdout) \(r.stderr)")
        // The group now rejects origin.test with a reset.
        #expect(lines.contains("after 000"), "\(r.stdout) \(r.stderr)")
        // The reader saw its download reset (status 4), long before the 40 s it would take.
        #expect(lines.contains("download=4"), "\(r.stdout) \(r.stderr) \(closed)")
        #expect(r.seconds < 35, "the closed download ended the run early: \(r.seconds) s")
        // The socket goes with Sluice.
        #expect(!FileManager.default.fileExists(atPath: socket))
    }

    @Test func closingAFlowStuckInAProxyHandshakeResetsTheApp() throws {
        // A "proxy" that accepts and never speaks: the flow waits in its handshake (5 s greeting deadline).
        try pair.net.start(["python3", "-c", """
        import socket, time
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", 1080)); s.listen(8); s.settimeout(60)
        held = []
        while True:
            c, _ = s.accept(); held.append(c)
        """], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:1080"))
        let profile = work.appendingPathComponent("stuck.conf").path
        try "[Proxy]\nstuck = socks5, 10.88.0.2, 1080\n\n[Rule]\nFINAL,stuck\n".write(toFile: profile, atomically: true, encoding: .utf8)
        let script = """
        start=$(date +%s%N)
        curl -s --max-time 20 -o /dev/null http://10.88.0.2:8080/hello.txt; rc=$?
        echo "curl=$rc ms=$(( ($(date +%s%N) - start) / 1000000 ))"
        """
        var state: String?
        var upstream: String?
        let r = try runSluice(["exec", "--profile", profile, "--control", socket, "--", "bash", "-c", script], in: pair.host,
                              timeout: 40) { _ in
            for _ in 0 ..< 40 {
                let list = self.json((try? self.control(["flows", "--json"]))?.stdout ?? "")["flows"] as? [[String: Any]] ?? []
                if let flow = list.first(where: { ($0["destination-port"] as? Int) == 8080 }), let id = flow["id"] as? Int {
                    state = flow["state"] as? String
                    upstream = flow["upstream"] as? String
                    let close = try? self.control(["close", String(id)])
                    #expect(close?.status == 0, "\(close?.stderr ?? "")")
                    return
                }
                usleep(50_000)
            }
        }
        #expect(state == "proxy-handshake", "\(r.stderr)")
        #expect(upstream?.hasPrefix("stuck (10.88.0.2:1080)") == true, "\(upstream ?? "nil")")
        // The app's SYN was waiting (lazy accept): it is refused with a reset, long before the proxy's 5 s deadline.
        let line = r.stdout.split(separator: "\n").first.map(String.init) ?? ""
        #expect(line.hasPrefix("curl=7 "), "\(r.stdout) \(r.stderr)")
        let ms = Int(line.split(separator: "=").last ?? "") ?? .max
        #expect(ms < 3000, "\(line)")
    }

    /// `sluice requests`: what finished last, as the flow log would write it,
    /// without a flow log; then followed live, each request as it finishes.
    @Test func recentRequestsAreListedAndFollowed() throws {
        let profileText = """
        [Rule]
        FINAL,DIRECT

        [Host]
        origin.test = 10.88.0.2

        [Map Local]
        ^http://origin\\.test:8080/mock$ data-type=text data="mocked"
        """
        let profile = work.appendingPathComponent("recent.conf").path
        try profileText.write(toFile: profile, atomically: true, encoding: .utf8)
        let go = work.appendingPathComponent("go").path, go2 = work.appendingPathComponent("go2").path
        let done = work.appendingPathComponent("done").path
        let script = """
        curl -s -o /dev/null -w 'hello %{http_code}\\n' http://origin.test:8080/hello.txt
        for i in $(seq 400); do [ -e \(go) ] && break; sleep 0.1; done
        curl -s -o /dev/null -w 'missing %{http_code}\\n' http://origin.test:8080/missing.txt
        for i in $(seq 400); do [ -e \(go2) ] && break; sleep 0.1; done
        curl -s -o /dev/null -w 'mock %{http_code}\\n' http://origin.test:8080/mock
        for i in $(seq 400); do [ -e \(done) ] && break; sleep 0.1; done
        """
        var followed = ""
        let r = try runSluice(["exec", "--profile", profile, "--control", socket, "--", "bash", "-c", script], in: pair.host,
                              timeout: 90) { _ in
            defer {
                for file in [go, go2, done] { _ = FileManager.default.createFile(atPath: file, contents: nil) }
            }
            // The hello request, then its connection once it has ended.
            var lines: [[String: Any]] = []
            var hello: [String: Any]?, helloConnection: [String: Any]?
            for _ in 0 ..< 100 {
                let text = (try? self.control(["requests", "--json", "--last", "50"]))?.stdout ?? ""
                lines = text.split(separator: "\n").map { self.json(String($0))["line"] as? [String: Any] ?? [:] }
                hello = lines.first { $0["kind"] as? String == "http" && $0["url"] as? String == "http://origin.test:8080/hello.txt" }
                if let id = hello?["connection"] as? Int {
                    helloConnection = lines.first { $0["kind"] as? String == "connection" && $0["connection"] as? Int == id }
                }
                if helloConnection != nil { break }
                usleep(100_000)
            }
            guard let hello, let helloConnection else {
                Issue.record("the hello request and its connection never showed up: \(lines)")
                return
            }
            #expect(hello["method"] as? String == "GET")
            #expect(hello["status"] as? Int == 200, "\(hello)")
            #expect(hello["responseBodyBytes"] as? Int == 6, "\(hello)")
            #expect(hello["policy"] as? String == "DIRECT", "\(hello)")
            #expect((hello["rule"] as? String)?.hasPrefix("\(profile):") == true, "\(hello)")
            #expect(helloConnection["transport"] as? String == "tcp", "\(helloConnection)")
            #expect(helloConnection["destinationPort"] as? Int == 8080, "\(helloConnection)")
            #expect(helloConnection["status"] as? String == "closed", "\(helloConnection)")
            #expect(helloConnection["bytesDown"] as? Int ?? 0 > 6, "\(helloConnection)")
            let table = (try? self.control(["requests"]))?.stdout ?? ""
            #expect(table.contains(" GET http://origin.test:8080/hello.txt  200  "), "\(table)")
            #expect(table.contains(" TCP 10.233.0.1."), "\(table)")

            // Following: the last HTTP request first, then each new one; three lines in all.
            let output = self.work.appendingPathComponent("follow.out")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            let follower = Process()
            follower.executableURL = URL(fileURLWithPath: sluiceBinary)
            follower.arguments = ["requests", "--follow", "--http", "--last", "50", "--count", "3", "--control", self.socket]
            guard let out = try? FileHandle(forWritingTo: output) else { Issue.record("no output file"); return }
            follower.standardOutput = out
            do { try follower.run() } catch {
                Issue.record("\(error)")
                return
            }
            // Its first look is done once it has printed the hello line: what comes later only following shows.
            func awaitLine(_ text: String) {
                for _ in 0 ..< 200 where !((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains(text) { usleep(50_000) }
            }
            awaitLine("hello.txt")
            _ = FileManager.default.createFile(atPath: go, contents: nil)
            // The mock only once the follower has shown the missing one: a follower that asked from
            // the same place again would show the missing one twice.
            awaitLine("missing.txt")
            _ = FileManager.default.createFile(atPath: go2, contents: nil)
            let deadline = Date().addingTimeInterval(20)
            while follower.isRunning, Date() < deadline { usleep(20_000) }
            if follower.isRunning { kill(follower.processIdentifier, SIGKILL) }
            follower.waitUntilExit()
            followed = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            #expect(follower.terminationStatus == 0, "\(followed)")
        }
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.split(separator: "\n") == ["hello 200", "missing 404", "mock 200"], "\(r.stdout) \(r.stderr)")
        let lines = followed.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(followed)")
        #expect(lines.first?.contains(" GET http://origin.test:8080/hello.txt  200  ") == true, "\(followed)")
        #expect(lines.dropFirst().first?.contains(" GET http://origin.test:8080/missing.txt  404  ") == true, "\(followed)")
        #expect(lines.last?.contains(" GET http://origin.test:8080/mock  200  ") == true, "\(followed)")
    }

    /// Closing an HTTP-mode flow whose request waits for its answer: the
    /// request is recorded, cut off by the close, under its connection.
    @Test func closingAnHTTPFlowRecordsItsRequestInFlight() throws {
        // An origin that reads the request and never answers.
        try pair.net.start(["python3", "-c", """
        import socket
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", 9120)); s.listen(8); s.settimeout(60)
        c, _ = s.accept(); c.settimeout(60)
        while c.recv(4096): pass
        """], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9120"))
        let profile = work.appendingPathComponent("inflight.conf").path
        try "[Host]\norigin.test = 10.88.0.2\n\n[Rule]\nFINAL,DIRECT\n\n[Statistics]\nall = \".*\", key=host\n"
            .write(toFile: profile, atomically: true, encoding: .utf8)
        let log = work.appendingPathComponent("inflight.jsonl").path
        var closedID: Int?
        let r = try runSluice(["exec", "--profile", profile, "--flow-log", log, "--control", socket, "--",
                               "curl", "-s", "--max-time", "20", "-o", "/dev/null", "http://origin.test:9120/slow"], in: pair.host,
                              timeout: 40) { _ in
            for _ in 0 ..< 100 {
                let list = self.json((try? self.control(["flows", "--json"]))?.stdout ?? "")["flows"] as? [[String: Any]] ?? []
                if let flow = list.first(where: { ($0["destination-port"] as? Int) == 9120 && ($0["state"] as? String) == "ESTABLISHED" }),
                   let id = flow["id"] as? Int {
                    closedID = id
                    let close = try? self.control(["close", String(id)])
                    #expect(close?.status == 0, "\(close?.stderr ?? "")")
                    return
                }
                usleep(50_000)
            }
        }
        #expect(closedID != nil, "\(r.stderr)")
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let requests = lines.filter { $0["kind"] as? String == "http" }
        #expect(requests.count == 1, "\(lines)")
        #expect(requests.first?["url"] as? String == "http://origin.test:9120/slow", "\(requests)")
        #expect(requests.first?["error"] as? String == "closed through the control API", "\(requests)")
        #expect(requests.first?["connection"] as? Int == closedID, "\(requests)")
    }

    @Test func clientsExplainAMissingSocket() throws {
        let r = try control(["status"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("no control socket at \(socket)"), "\(r.stderr)")
        let usage = try runSluice(["close"], timeout: 10)
        #expect(usage.status == 2)
        #expect(usage.stderr.contains("which flow?"), "\(usage.stderr)")
    }

    @Test func aSecondSluiceOnTheSamePathIsRefused() throws {
        let script = "for i in $(seq 100); do [ -S \(socket) ] && break; sleep 0.1; done; sleep 1"
        var second: SluiceRun?
        let r = try runSluice(["exec", "--control", socket, "--", "bash", "-c", script], in: pair.host, timeout: 30) { _ in
            for _ in 0 ..< 100 where !FileManager.default.fileExists(atPath: self.socket) { usleep(50_000) }
            second = try? self.pair.exec("true", options: ["--control", self.socket], timeout: 20)
        }
        #expect(r.status == 0, "\(r.stderr)")
        #expect(second?.status == 1)
        #expect(second?.stderr.contains("another Sluice answers on \(socket)") == true, "\(second?.stderr ?? "")")
    }
}
