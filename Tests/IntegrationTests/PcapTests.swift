import Foundation
import Testing
import TestSupport

/// `sluice exec --pcap`: what crosses the TUN, read back by tshark.
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces and TUN devices"), .serialized)
final class PcapTests {
    let pair: ServerPair
    var work: URL { pair.work }

    init() throws {
        pair = try ServerPair("pcap")
        try "hello from nginx\n".write(to: work.appendingPathComponent("hello.txt"), atomically: true, encoding: .utf8)
        try pair.makeFile("256k.bin", bytes: 262_144)
    }

    func tshark(_ arguments: [String]) throws -> [String] {
        let out = try pair.net.run(["tshark", "-n"] + arguments, timeout: 60).output
        // tshark warns on stderr (merged here) when run as root.
        return out.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("Running as user") }
    }

    /// "N packets in, M out" from the exit summary.
    func packetCounts(_ stderr: String) -> (into: Int, out: Int)? {
        guard let match = stderr.firstMatch(of: /(\d+) packets in, (\d+) out/) else { return nil }
        return (Int(match.1)!, Int(match.2)!)
    }

    @Test func everyPacketBothWaysIsCapturedAsRawIP() throws {
        let pcap = work.appendingPathComponent("all.pcap").path
        let r = try pair.exec("""
        for i in 1 2 3; do curl -s -o /dev/null http://10.88.0.2:8080/hello.txt; done
        curl -s http://10.88.0.2:8080/256k.bin | sha256sum | cut -c1-64
        ping -c 2 -i 0.2 -W 1 10.88.0.2 > /dev/null
        """, options: ["--pcap", pcap])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "\(try pair.digest("256k.bin"))\n")
        let counts = try #require(packetCounts(r.stderr), "\(r.stderr)")
        let frames = try tshark(["-r", pcap, "-T", "fields", "-e", "frame.number"])
        // Every packet read from the TUN and every packet written to it, nothing else.
        #expect(frames.count == counts.into + counts.out, "\(r.stderr)")
        let encapsulation = try tshark(["-r", pcap, "-T", "fields", "-e", "frame.encap_type", "-c", "1"])
        // Wireshark's WTAP_ENCAP_RAW_IP is 7: the file's link type is LINKTYPE_RAW (101).
        #expect(encapsulation == ["7"])
        let header = try Data(contentsOf: URL(fileURLWithPath: pcap)).prefix(24)
        #expect(header.count == 24 && header[20] == 101 && header[21] == 0, "link type field")
        let pings = try tshark(["-r", pcap, "-Y", "icmp", "-T", "fields", "-e", "icmp.type"])
        #expect(pings == ["8", "0", "8", "0"])
        // Without a capture Sluice leaves its TCP checksums to the app's kernel;
        // with one, every segment is written whole, so the file shows none partial.
        let checked = try tshark(["-r", pcap, "-o", "tcp.check_checksum:TRUE", "-Y", "tcp", "-T", "fields", "-e", "tcp.checksum.status"])
        #expect(!checked.isEmpty && checked.allSatisfy { $0 == "1" }, "tcp.checksum.status (0 bad, 1 good, 2 unverified): \(Set(checked))")
    }

    /// `--pcap-per-flow DIR` next to `--pcap`: every packet of the whole
    /// capture is in exactly one flow's file, each connection in its own.
    @Test func perFlowFilesSplitTheCaptureByConnection() throws {
        let pcap = work.appendingPathComponent("whole.pcap").path
        let folder = work.appendingPathComponent("flows")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let r = try pair.exec("""
        for i in 1 2 3; do curl -s -o /dev/null http://10.88.0.2:8080/hello.txt; done
        ping -c 2 -i 0.2 -W 1 10.88.0.2 > /dev/null
        """, options: ["--pcap", pcap, "--pcap-per-flow", folder.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains(" flow files"), "\(r.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        let tcp = names.filter { $0.contains("-tcp-") && $0.hasSuffix("-10.88.0.2.8080.pcap") }
        #expect(tcp.count == 3, "\(names)")
        let echo = names.filter { $0.contains("-icmp-") }
        #expect(echo.count == 1, "\(names)")
        var total = 0
        for name in names {
            let path = folder.appendingPathComponent(name).path
            let frames = try tshark(["-r", path, "-T", "fields", "-e", "frame.number"])
            total += frames.count
            if tcp.contains(name) {
                // One connection, both ways: one SYN, one SYN-ACK, the request and the response.
                let syns = try tshark(["-r", path, "-Y", "tcp.flags.syn==1", "-T", "fields", "-e", "tcp.flags.ack"])
                #expect(syns.sorted() == ["0", "1"], "\(name)")
                let streams = Set(try tshark(["-r", path, "-T", "fields", "-e", "tcp.stream"]))
                #expect(streams == ["0"], "\(name)")
                let requests = try tshark(["-r", path, "-d", "tcp.port==8080,http", "-Y", "http.request", "-T", "fields", "-e", "http.request.uri"])
                #expect(requests == ["/hello.txt"], "\(name)")
            }
        }
        let whole = try tshark(["-r", pcap, "-T", "fields", "-e", "frame.number"])
        #expect(total == whole.count, "\(names)")
        let pings = try tshark(["-r", folder.appendingPathComponent(try #require(echo.first)).path, "-T", "fields", "-e", "icmp.type"])
        #expect(pings == ["8", "0", "8", "0"])
    }

    /// A `capture` rule: the whole capture and the per-flow files hold the
    /// flows it decided, from their SYN, and nothing else (not the other
    /// request to the same server, not the DNS lookups, not the pings).
    @Test func captureRulesChooseTheFlowsTheCaptureKeeps() throws {
        let pcap = work.appendingPathComponent("chosen.pcap").path
        let folder = work.appendingPathComponent("chosen-flows")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let profile = work.appendingPathComponent("capture.conf").path
        try """
        [Host]
        kept.test = 10.88.0.2
        other.test = 10.88.0.2
        [Rule]
        DOMAIN,kept.test,DIRECT,capture
        FINAL,DIRECT
        """.write(toFile: profile, atomically: true, encoding: .utf8)
        let r = try pair.exec("""
        curl -s -o /dev/null -w '%{http_code}\\n' http://other.test:8080/hello.txt
        curl -s -o /dev/null -w '%{http_code}\\n' 'http://kept.test:8080/hello.txt?chosen=1'
        curl -s -o /dev/null -w '%{http_code}\\n' http://other.test:8080/hello.txt
        ping -c 2 -i 0.2 -W 1 10.88.0.2 > /dev/null
        """, options: ["--profile", profile, "--pcap", pcap, "--pcap-per-flow", folder.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "200\n200\n200\n", "\(r.stderr)")
        #expect(r.stderr.contains(" left out of flows no capture rule chose"), "\(r.stderr)")
        let hosts = try tshark(["-r", pcap, "-d", "tcp.port==8080,http", "-Y", "http.request", "-T", "fields", "-e", "http.host", "-e", "http.request.uri"])
        #expect(hosts == ["kept.test:8080\t/hello.txt?chosen=1"], "\(r.stderr)")
        let syns = try tshark(["-r", pcap, "-Y", "tcp.flags.syn==1", "-T", "fields", "-e", "tcp.flags.ack"])
        #expect(syns.sorted() == ["0", "1"], "the chosen flow from its first packet")
        let others = try tshark(["-r", pcap, "-Y", "not tcp", "-T", "fields", "-e", "frame.number"])
        #expect(others.isEmpty, "DNS and ping were chosen by no rule")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(names.count == 1 && names[0].contains("-tcp-"), "\(names)")
        let flowFrames = try tshark(["-r", folder.appendingPathComponent(names[0]).path, "-T", "fields", "-e", "frame.number"])
        let wholeFrames = try tshark(["-r", pcap, "-T", "fields", "-e", "frame.number"])
        #expect(flowFrames.count == wholeFrames.count && !wholeFrames.isEmpty)
        #expect(try timesStepBack(pcap) == 0)
    }

    /// A pcap of one program's traffic: `capture` on a PROCESS-NAME rule keeps
    /// wget's connection, from its SYN, while it waited for its process to
    /// be found, and leaves curl's out.
    @Test func aCaptureOfOneProgramsTraffic() throws {
        let pcap = work.appendingPathComponent("wget-only.pcap").path
        let profile = work.appendingPathComponent("wget-only.conf").path
        try "[Rule]\nPROCESS-NAME,wget,DIRECT,capture\nFINAL,DIRECT\n".write(toFile: profile, atomically: true, encoding: .utf8)
        let r = try pair.exec("""
        curl -s -o /dev/null -w '%{http_code}\\n' 'http://10.88.0.2:8080/hello.txt?by=curl'
        wget -q -O /dev/null 'http://10.88.0.2:8080/hello.txt?by=wget' && echo wget
        curl -s -o /dev/null -w '%{http_code}\\n' 'http://10.88.0.2:8080/hello.txt?by=curl-again'
        """, options: ["--profile", profile, "--pcap", pcap])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "200\nwget\n200\n", "\(r.stderr)")
        let uris = try tshark(["-r", pcap, "-d", "tcp.port==8080,http", "-Y", "http.request", "-T", "fields", "-e", "http.request.uri"])
        #expect(uris == ["/hello.txt?by=wget"], "\(r.stderr)")
        let syns = try tshark(["-r", pcap, "-Y", "tcp.flags.syn==1", "-T", "fields", "-e", "tcp.flags.ack"])
        #expect(syns.sorted() == ["0", "1"], "wget's connection from its first packet")
        #expect(try timesStepBack(pcap) == 0)
    }

    /// New connections to a chosen server wait for their first bytes (the
    /// rule needs the Host header) while downloads from it flow: their held
    /// handshakes go into the file in time order, not after the packets that
    /// crossed the TUN meanwhile.
    @Test func heldPacketsKeepTheFilesTimeOrder() throws {
        let pcap = work.appendingPathComponent("ordered.pcap").path
        let profile = work.appendingPathComponent("ordered.conf").path
        try "[Host]\nkept.test = 10.88.0.2\n[Rule]\nDOMAIN,kept.test,DIRECT,capture\nFINAL,DIRECT\n"
            .write(toFile: profile, atomically: true, encoding: .utf8)
        let r = try pair.exec("""
        (for i in $(seq 20); do curl -s -o /dev/null http://kept.test:8080/256k.bin; done) & d=$!
        for i in $(seq 20); do curl -s -o /dev/null -w '%{http_code}\\n' http://kept.test:8080/hello.txt; done | sort | uniq -c | tr -s ' '
        wait $d
        """, options: ["--profile", profile, "--pcap", pcap])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == " 20 200\n", "\(r.stdout) \(r.stderr)")
        let requests = try tshark(["-r", pcap, "-d", "tcp.port==8080,http", "-Y", "http.request", "-T", "fields", "-e", "http.request.uri"])
        #expect(requests.count == 40, "\(requests.count)")
        #expect(try timesStepBack(pcap) == 0)
    }

    /// How often a frame's timestamp is older than the one before it.
    func timesStepBack(_ pcap: String) throws -> Int {
        let times = try tshark(["-r", pcap, "-T", "fields", "-e", "frame.time_epoch"]).compactMap(Double.init)
        return zip(times, times.dropFirst()).filter { $1 < $0 }.count
    }

    /// With every writer on (pcap, flow log, HAR), SIGHUP still reloads and
    /// SIGTERM still stops Sluice the graceful way: the writers' threads took
    /// those signals once, and their default action ended the process (no
    /// reload, no exit summary, the flow log's open lines lost).
    @Test func signalsReachTheLoopWhileWritersRun() throws {
        let profile = work.appendingPathComponent("signals.conf").path
        try "[Rule]\nFINAL,DIRECT\n".write(toFile: profile, atomically: true, encoding: .utf8)
        let files = ["pcap", "jsonl", "har"].map { work.appendingPathComponent("signals.\($0)").path }
        let options = ["--profile", profile, "--pcap", files[0], "--flow-log", files[1], "--har", files[2]]
        // As from a shell: no signal blocked (the test runner's children inherit most of them blocked).
        let unblocked = ["/usr/bin/python3", "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])"]
        func exec(_ script: String) throws -> SluiceRun {
            try runSluice(["exec"] + options + ["--", "bash", "-c", script], in: pair.host, through: unblocked, timeout: 60)
        }
        // The command is Sluice's child: it sends the signals itself.
        let reloads = try exec("""
        for i in 1 2 3 4 5; do
          kill -HUP $PPID
          curl -s -o /dev/null -w '%{http_code}\\n' http://10.88.0.2:8080/hello.txt
        done
        """)
        #expect(reloads.status == 0, "\(reloads.stderr)")
        #expect(reloads.stdout == String(repeating: "200\n", count: 5), "\(reloads.stdout) \(reloads.stderr)")
        #expect(reloads.stderr.components(separatedBy: "reloaded").count - 1 == 5, "\(reloads.stderr)")
        let stopped = try exec("""
        curl -s -o /dev/null -w '%{http_code}\\n' http://10.88.0.2:8080/hello.txt
        kill -TERM $PPID
        sleep 10
        """)
        // 128 + SIGTERM, after the exit summary; the flow log has the request.
        #expect(stopped.status == 143, "\(stopped.stderr)")
        #expect(stopped.stdout == "200\n", "\(stopped.stdout) \(stopped.stderr)")
        #expect(stopped.stderr.contains("TCP flows relayed"), "\(stopped.stderr)")
        let log = (try? String(contentsOfFile: files[1], encoding: .utf8)) ?? ""
        #expect(log.contains("\"10.88.0.2\""), "\(log)")
    }

    /// A connection still open when Sluice stops is cut off: its flow-log
    /// line ends `reset` ("Sluice stopped"), relayed as it is or in HTTP mode
    /// (with --har). Both ended `closed` with no error. (A request still in
    /// flight at the stop gets its line, with that error, too.)
    @Test func connectionsOpenAtTheStopEndReset() throws {
        for (name, extra) in [("plain", [String]()), ("http", ["--har", work.appendingPathComponent("stop.har").path])] {
            let log = work.appendingPathComponent("stop-\(name).jsonl").path
            let slow = try pair.slowDownload("http://10.88.0.2:8080/256k.bin", bytesPerSecond: 20_000)
            let r = try pair.exec("""
            \(slow) &
            sleep 1
            """, options: ["--flow-log", log] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            let summary = try pair.net.run(["/usr/bin/python3", "-c", """
            import json, sys
            for line in open(sys.argv[1]):
                r = json.loads(line)
                if r.get("transport") == "tcp" or r.get("kind") == "http":
                    print(r.get("kind"), r.get("status"), r.get("error"))
            """, log]).output
            // (In HTTP mode Sluice had the whole response, which the slow app was still reading: its request is done.)
            let expected = name == "plain" ? "connection reset Sluice stopped\n" : "http 200 None\nconnection reset Sluice stopped\n"
            #expect(summary == expected, "\(name): \(summary) \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
    }

    /// A reload that adds capture rules narrows the running capture to the
    /// flows they choose, open ones included (decided again on what the
    /// tunnel knows of them: here the address), and a reload that drops them
    /// widens it to every flow again.
    @Test func aReloadChangesWhichFlowsTheCaptureKeeps() throws {
        let pcap = work.appendingPathComponent("reloaded.pcap").path
        let profile = work.appendingPathComponent("reload-capture.conf").path
        let socket = work.appendingPathComponent("reload-capture.sock").path
        try "[Rule]\nFINAL,DIRECT\n".write(toFile: profile, atomically: true, encoding: .utf8)
        let reload = "\(sluiceBinary) reload --control \(socket)"
        let kept = "http://[fd00:88::2]:8080", other = "http://10.88.0.2:8080"
        let slowOther = try pair.slowDownload("\(other)/256k.bin?phase=open", bytesPerSecond: 100_000)
        let slowKept = try pair.slowDownload("\(kept)/256k.bin?phase=open", bytesPerSecond: 100_000)
        let r = try pair.exec("""
        curl -s -o /dev/null '\(other)/hello.txt?phase=1'
        \(slowOther) & o=$!
        \(slowKept) & k=$!
        for i in $(seq 100); do
          [ "$(ss -Htn state established '( dport = :8080 )' | wc -l)" -ge 2 ] && break
          sleep 0.05
        done
        printf '[Rule]\\nIP-CIDR6,fd00:88::2/128,DIRECT,capture\\nFINAL,DIRECT\\n' > \(profile)
        \(reload) | grep -c reloaded
        curl -s -o /dev/null '\(other)/hello.txt?phase=2'
        curl -s -o /dev/null '\(kept)/hello.txt?phase=2'
        wait $o $k
        printf '[Rule]\\nFINAL,DIRECT\\n' > \(profile)
        \(reload) | grep -c reloaded
        curl -s -o /dev/null '\(other)/hello.txt?phase=3'
        """, options: ["--profile", profile, "--pcap", pcap, "--control", socket])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "1\n1\n", "\(r.stdout) \(r.stderr)")
        let requests = try tshark(["-r", pcap, "-d", "tcp.port==8080,http", "-Y", "http.request", "-T", "fields", "-e", "http.host", "-e", "http.request.uri"])
        #expect(requests.sorted() == ["10.88.0.2:8080\t/256k.bin?phase=open", "10.88.0.2:8080\t/hello.txt?phase=1",
                                      "10.88.0.2:8080\t/hello.txt?phase=3",
                                      "[fd00:88::2]:8080\t/256k.bin?phase=open", "[fd00:88::2]:8080\t/hello.txt?phase=2"], "\(r.stderr)")
        // The open download the new rules did not choose: its start is in the
        // capture, its end (after the reload) is not; the chosen one's is.
        func fins(_ host: String) throws -> Int {
            let stream = try tshark(["-r", pcap, "-d", "tcp.port==8080,http", "-Y", "http.request.uri contains \"phase=open\" and http.host contains \"\(host)\"",
                                     "-T", "fields", "-e", "tcp.stream"])
            guard stream.count == 1 else { return -1 }
            return try tshark(["-r", pcap, "-Y", "tcp.stream==\(stream[0]) and tcp.flags.fin==1", "-T", "fields", "-e", "frame.number"]).count
        }
        let otherFins = try fins("10.88.0.2"), keptFins = try fins("fd00:88::2")
        #expect(otherFins == 0)
        #expect(keptFins == 2)
        // Held packets come out in time order with the kept flows' (FlowSelection, "Order").
        #expect(try timesStepBack(pcap) == 0)
    }

    /// Each recorder and the fault injector has its line in the exit summary
    /// (the capture's once took the place of the HAR's and the flow log's).
    @Test func theExitSummaryNamesEveryRecorder() throws {
        let r = try pair.exec("curl -s -o /dev/null http://10.88.0.2:8080/hello.txt", options: [
            "--pcap", work.appendingPathComponent("summary.pcap").path,
            "--har", work.appendingPathComponent("summary.har").path,
            "--flow-log", work.appendingPathComponent("summary.jsonl").path,
            "--faults", "delay=1ms,rate=100mbit"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stderr.split(separator: "\n").map(String.init)
        for prefix in ["HAR: 1 entries", "flow log: ", "faults: 0 dropped", "capture: "] {
            #expect(lines.contains { $0.hasPrefix(prefix) }, "\(prefix)\n\(r.stderr)")
        }
        #expect(lines.contains { $0.hasPrefix("faults: ") && $0.hasSuffix("0 over the rate's 200 ms queue") }, "\(r.stderr)")
    }

    @Test func theRequestsTsharkDecodesAreTheOnesCurlSent() throws {
        let pcap = work.appendingPathComponent("http.pcap").path
        let r = try pair.exec("""
        curl -s -o /dev/null http://10.88.0.2:8080/hello.txt
        curl -s -o /dev/null -X POST --data 'a=1' http://10.88.0.2:8080/hello.txt
        curl -s -o /dev/null 'http://[fd00:88::2]:8080/missing?x=2'
        """, options: ["--pcap", pcap])
        #expect(r.status == 0, "\(r.stderr)")
        let requests = try tshark(["-r", pcap, "-d", "tcp.port==8080,http", "-Y", "http.request", "-T", "fields",
                                   "-e", "http.request.method", "-e", "http.request.uri"])
        #expect(requests == ["GET\t/hello.txt", "POST\t/hello.txt", "GET\t/missing?x=2"])
        let statuses = try tshark(["-r", pcap, "-d", "tcp.port==8080,http", "-Y", "http.response", "-T", "fields", "-e", "http.response.code"])
        #expect(statuses == ["200", "405", "404"])
    }

    @Test func aBPFFilterKeepsExactlyWhatItNames() throws {
        let pcap = work.appendingPathComponent("filtered.pcap").path
        let all = work.appendingPathComponent("unfiltered.pcap").path
        let script = """
        curl -s -o /dev/null http://10.88.0.2:8080/hello.txt
        ping -c 3 -i 0.2 -W 1 10.88.0.2 > /dev/null
        dig +short +tries=1 +timeout=1 sluice.test @10.88.0.2 > /dev/null || true
        """
        let filtered = try pair.exec(script, options: ["--pcap", pcap, "--pcap-filter", "icmp"])
        #expect(filtered.status == 0, "\(filtered.stderr)")
        // Three echo requests, three replies, and the port unreachable that the
        // server's kernel sent for dig's query (no DNS server there), which
        // Sluice passes on to the app (its protocol, then the quoted UDP's).
        let frames = try tshark(["-r", pcap, "-T", "fields", "-e", "ip.proto"])
        #expect(frames == Array(repeating: "1", count: 6) + ["1,17"], "\(frames)")
        #expect(filtered.stderr.contains("capture: 7 packets written"), "\(filtered.stderr)")
        // The same session unfiltered has more, and exactly seven ICMP packets among them.
        let unfiltered = try pair.exec(script, options: ["--pcap", all])
        #expect(unfiltered.status == 0)
        #expect(try tshark(["-r", all, "-Y", "icmp"]).count == 7)
        #expect(try tshark(["-r", all]).count > 6)
    }

    @Test func aBadFilterIsAClearError() throws {
        let r = try pair.exec("echo ran", options: ["--pcap", work.appendingPathComponent("x.pcap").path, "--pcap-filter", "tcp prot 80"])
        #expect(r.status == 1)
        #expect(r.stdout == "")
        #expect(r.stderr.contains("capture:"), "\(r.stderr)")
    }
}
