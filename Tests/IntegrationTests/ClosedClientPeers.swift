import Foundation
import Testing
import TestSupport

/// A server that stays silent and open after its client's FIN, for the
/// tests that a client gone for good (closed, not half-closed) ends its
/// flow through Sluice: exec's plain flows and `sluice proxy`'s relays.
extension ServerPair {
    /// Starts it on 10.88.0.2:`port` (server namespace) and returns the file
    /// it writes to. It takes two connections: for each it reads to the
    /// client's FIN, then stays silent and watches whether the connection is
    /// reset ("closed reset 10": seconds after the FIN) or stays open; the
    /// second (a half-closed client, expected to stay) gets "bye" after.
    func startSilentAfterFINServer(port: Int) throws -> String {
        let events = path("silent-\(port).events")
        try net.start(["python3", "-c", """
        import socket, time
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", \(port))); s.listen(4); s.settimeout(60)
        # Unanswered, the probes (after 5 s, then every 5 s, three) end a flow at 20 s: the half-closed one outlives that.
        for name, window in (("closed", 40), ("half-closed", 24)):
            c, _ = s.accept(); c.settimeout(60)
            while c.recv(65536): pass
            start = time.time()
            # Silent and open after the client's FIN: the connection ends only if reset (TCP_CLOSE).
            while time.time() - start < window and c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] != 7: time.sleep(0.2)
            state = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]
            with open("\(events)", "a") as f: f.write("%s %s %.0f\\n" % (name, "reset" if state == 7 else "open", time.time() - start))
            if name == "half-closed": c.sendall(b"bye")
        """], in: server)
        #expect(waitForListener("10.88.0.2:\(port)"))
        return events
    }

    /// The client's script: with tcp_fin_timeout at 5 s, a client that
    /// sends "hello" and closes, then (once the server has written its
    /// line) one that half-closes and waits for "bye"; then the server's
    /// lines. `connect` is a Python expression for the connected socket;
    /// `payload` one for the bytes each client sends before its FIN.
    static func closedThenHalfClosedClients(events: String, connect: String, prelude: String = "import socket",
                                            payload: String = "b\"hello\"") -> String {
        """
        sysctl -qw net.ipv4.tcp_fin_timeout=5
        python3 -c '
        \(prelude)
        s = \(connect); s.sendall(\(payload)); s.close()
        '
        for i in $(seq 250); do [ -s \(events) ] && break; sleep 0.2; done
        python3 -c '
        \(prelude)
        s = \(connect); s.settimeout(60); s.sendall(\(payload)); s.shutdown(socket.SHUT_WR)
        print("answer", s.recv(100).decode())
        '
        for i in $(seq 250); do [ $(wc -l < \(events) 2>/dev/null || echo 0) -ge 2 ] && break; sleep 0.2; done
        cat \(events)
        """
    }

    /// What those clients should have printed: the half-closed one got its
    /// answer and outlived the probes; the closed one's connection was reset
    /// soon after its socket was gone (its kernel dropped it after 5 s).
    static func expectClosedClientReset(_ output: String, log: String) {
        let lines = output.split(separator: "\n").map { $0.split(separator: " ") }
        #expect(lines.count == 3 && lines[0] == ["answer", "bye"] && lines[1].prefix(2) == ["closed", "reset"]
                && lines[2].prefix(2) == ["half-closed", "open"], "\(output)\n\(log)")
        if lines.count == 3, lines[1].count == 3, let seconds = Int(lines[1][2]) {
            #expect(seconds <= 25, "\(output)")
        }
    }
}
