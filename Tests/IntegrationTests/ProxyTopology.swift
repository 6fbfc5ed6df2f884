import Foundation
import Sys
import TestSupport

/// Three namespaces in a row, so that a flow can reach the origin only through a proxy:
///
///     host (Sluice) 10.88.0.1 ── proxy 10.88.0.2 | 10.89.0.1 ── origin 10.89.0.2 (nginx, DNS)
///
/// The host namespace has no route to 10.89.0.0/24: a flow that went DIRECT fails.
/// The proxy namespace resolves the origin's names from its own hosts file
/// (`ip netns exec` bind-mounts /etc/netns/NAME/hosts), so a proxy that
/// receives a name can connect, and one that receives a fake IP cannot.
/// Proxies (danted, tinyproxy, the fake one) are started per test, logging into
/// the test's folder; everything started is stopped by PID, and the temporary
/// system user (danted's username method checks system accounts) is deleted.
final class ProxyTopology {
    let net: TestNetwork
    let host: String
    let proxy: String
    let origin: String
    let work: URL
    /// Names the proxy namespace resolves to the origin.
    static let originNames = ["origin.test", "far.test", "named.test", "health.test", "good.test", "bad.test", "dead.test",
                              "close.test", "garbage.test", "stall.test", "badauth.test", "refused.test"]
    private let etcDirectory: String
    private var users: [String] = []
    private var started: [String: ChildProcess] = [:]

    init(_ label: String) throws {
        net = TestNetwork(label)
        host = try net.namespace("host")
        proxy = try net.namespace("prx")
        origin = try net.namespace("org")
        etcDirectory = "/etc/netns/\(proxy)"
        work = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-\(net.tag)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try net.run(["chmod", "755", work.path])
        try net.link(host, "h0", proxy, "p0")
        try net.link(proxy, "p1", origin, "o0")
        try net.address(host, "h0", "10.88.0.1/24")
        try net.address(proxy, "p0", "10.88.0.2/24")
        try net.address(proxy, "p1", "10.89.0.1/24")
        try net.address(origin, "o0", "10.89.0.2/24")
        try FileManager.default.createDirectory(atPath: etcDirectory, withIntermediateDirectories: true)
        let hosts = "127.0.0.1 localhost\n" + Self.originNames.map { "10.89.0.2 \($0)\n" }.joined()
        try hosts.write(toFile: etcDirectory + "/hosts", atomically: true, encoding: .utf8)

        let conf = """
        daemon off; pid \(work.path)/nginx.pid; error_log \(work.path)/nginx-error.log;
        events { worker_connections 512; }
        http { access_log \(work.path)/nginx-access.log; sendfile on; client_body_temp_path \(work.path); keepalive_requests 1000;
          server { listen 10.89.0.2:8080; root \(work.path)/www;
            location = /echo { default_type text/plain; return 200 "method=$request_method uri=$request_uri host=$host env=$http_x_env proxyauth=$http_proxy_authorization\\n"; } } }
        """
        try FileManager.default.createDirectory(at: work.appendingPathComponent("www"), withIntermediateDirectories: true)
        try net.run(["chmod", "755", work.appendingPathComponent("www").path])
        try conf.write(to: work.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        try "hello from the origin\n".write(to: work.appendingPathComponent("www/hello.txt"), atomically: true, encoding: .utf8)
        try net.start(["nginx", "-c", work.appendingPathComponent("nginx.conf").path, "-p", work.path], in: origin)
        try waitForListener("10.89.0.2:8080", in: origin, what: "nginx")
    }

    deinit {
        net.destroy()
        for user in users { _ = try? net.run(["userdel", user], check: false) }
        try? FileManager.default.removeItem(atPath: etcDirectory)
        try? FileManager.default.removeItem(at: work)
    }

    func path(_ file: String) -> String { work.appendingPathComponent(file).path }

    /// Random bytes served by nginx as /NAME; returns their sha256.
    func makeFile(_ name: String, bytes: Int) throws -> String {
        try net.run(["sh", "-c", "head -c \(bytes) /dev/urandom > \(path("www/" + name))"], timeout: 120)
        return String(try net.run(["sha256sum", path("www/" + name)], timeout: 120).output.prefix(64))
    }

    /// Polls `ss` in `namespace` until something listens on `address` (TCP or UDP).
    func waitForListener(_ address: String, in namespace: String, what: String) throws {
        let up = TestNetwork.waitUntil(seconds: 10) {
            ((try? self.net.run(["ss", "-ltnuH"], in: namespace).output) ?? "").contains(address + " ")
        }
        guard up else {
            throw TestNetwork.CommandFailed(command: [what], status: 1, output: "\(what) did not listen on \(address)")
        }
    }

    func log(_ name: String) -> String { (try? String(contentsOfFile: path(name), encoding: .utf8)) ?? "" }

    /// Stops a proxy started under `name` (by its PID) and waits until its port is free.
    func stop(_ name: String, address: String) {
        started[name]?.terminate(graceMilliseconds: 2000)
        started[name] = nil
        _ = TestNetwork.waitUntil(seconds: 5) {
            !(((try? self.net.run(["ss", "-ltnH"], in: self.proxy).output) ?? "").contains(address + " "))
        }
    }

    // MARK: Proxies

    /// A temporary system account for danted's `socksmethod: username`.
    func makeUser(password: String) throws -> String {
        let name = "slpx\(net.tag.suffix(8).filter { $0.isNumber || $0 == "x" })\(users.count)"
        try net.run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", name])
        users.append(name)
        try net.run(["sh", "-c", "echo '\(name):\(password)' | chpasswd"])
        return name
    }

    /// danted on 10.88.0.2:`port`, logging to `danted-PORT.log` with debug on
    /// (its debug lines show each request's address type and address).
    /// `blockPort`: CONNECTs to the origin on that port are refused by rule.
    func startDanted(port: Int, username: Bool = false, blockPort: Int? = nil) throws {
        let log = path("danted-\(port).log")
        let block = blockPort.map { """
        socks block {
          from: 0.0.0.0/0 to: 10.89.0.2/32 port = \($0)
          log: connect error
        }
        """ } ?? ""
        let conf = """
        logoutput: \(log)
        debug: 1
        internal: 10.88.0.2 port = \(port)
        external: 10.89.0.1
        clientmethod: none
        socksmethod: \(username ? "username" : "none")
        user.privileged: root
        user.unprivileged: nobody
        client pass {
          from: 0.0.0.0/0 to: 0.0.0.0/0
          log: connect disconnect error
        }
        \(block)
        socks pass {
          from: 0.0.0.0/0 to: 0.0.0.0/0
          command: connect udpassociate udpreply
          log: connect disconnect error
        }

        """
        let file = path("danted-\(port).conf")
        try conf.write(toFile: file, atomically: true, encoding: .utf8)
        started["danted-\(port)"] = try net.start(["danted", "-f", file, "-p", path("danted-\(port).pid")], in: proxy,
                                                  log: path("danted-\(port).out"))
        try waitForListener("10.88.0.2:\(port)", in: proxy, what: "danted")
    }

    /// tinyproxy on 10.88.0.2:`port` (CONNECT allowed to 8080 and 7000-7100),
    /// logging requests to `tinyproxy-PORT.log`.
    func startTinyproxy(port: Int, basicAuth: (String, String)? = nil) throws {
        let conf = """
        Port \(port)
        Listen 10.88.0.2
        Timeout 30
        LogFile "\(path("tinyproxy-\(port).log"))"
        LogLevel Info
        MaxClients 50
        Allow 10.88.0.0/24
        ConnectPort 8080
        DisableViaHeader Yes
        \(basicAuth.map { "BasicAuth \($0.0) \($0.1)" } ?? "")

        """
        let file = path("tinyproxy-\(port).conf")
        try conf.write(toFile: file, atomically: true, encoding: .utf8)
        started["tinyproxy-\(port)"] = try net.start(["tinyproxy", "-d", "-c", file], in: proxy, log: path("tinyproxy-\(port).out"))
        try waitForListener("10.88.0.2:\(port)", in: proxy, what: "tinyproxy")
    }

    /// The fake proxy (FakeProxy.script) on 10.88.0.2, one port per fault.
    func startFakeProxy() throws {
        let script = path("fake-proxy.py")
        try FakeProxy.script.write(toFile: script, atomically: true, encoding: .utf8)
        started["fake"] = try net.start(["/usr/bin/python3", script, "10.88.0.2", path("fake-proxy.log")], in: proxy, log: path("fake-proxy.out"))
        for port in FakeProxy.Fault.allCases.map(\.port) {
            try waitForListener("10.88.0.2:\(port)", in: proxy, what: "fake proxy")
        }
    }

    /// A DNS server on the origin (10.89.0.2:53, UDP) that answers every A
    /// query with 10.89.0.7 and logs each name it was asked to `dns.log`.
    func startDNS() throws {
        let script = path("dns.py")
        try FakeProxy.dnsScript.write(toFile: script, atomically: true, encoding: .utf8)
        started["dns"] = try net.start(["/usr/bin/python3", script, "10.89.0.2", path("dns.log")], in: origin, log: path("dns.out"))
        try waitForListener("10.89.0.2:53", in: origin, what: "dns server")
    }

    // MARK: Running Sluice

    /// Writes a profile into the test's folder and returns its path.
    func profile(_ text: String, name: String = "proxy.conf") throws -> String {
        let file = path(name)
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// `sluice exec --profile FILE -- bash -c script` in the host namespace.
    func exec(_ script: String, profile: String, timeout: Double = 90,
              whileRunning: ((Process) -> Void)? = nil) throws -> SluiceRun {
        try runSluice(["exec", "--profile", profile, "--", "bash", "-c", script], in: host, timeout: timeout, whileRunning: whileRunning)
    }
}
