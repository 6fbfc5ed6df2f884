internal import HTTP
internal import Sys

/// `sluice status | flows | requests | close ID | select GROUP MEMBER | reload | top`:
/// clients of a running Sluice's control socket. Exit status: 0 done, 1 the
/// socket or the request failed, 2 usage.
public struct ControlCommand {
    public enum Action: Sendable, Equatable {
        case status
        case flows
        case close(UInt64)
        case select(group: String, member: String)
        case reload
        /// A live view: the summary and the flows, redrawn every `interval` seconds, `count` times (nil: until Ctrl-C).
        case top(interval: Double, count: Int?)
        /// The `last` requests and connections that finished; with `follow`,
        /// then each new one as it finishes, until `count` lines in all (nil: until Ctrl-C).
        case requests(last: Int, follow: Bool, count: Int?, httpOnly: Bool)
    }

    public struct Options: Sendable, Equatable {
        public var action: Action
        public var path = ControlServer.defaultPath
        /// Print the server's JSON as it came (for scripts).
        public var json = false
        public init(action: Action) { self.action = action }
    }

    public struct UsageError: Error, CustomStringConvertible {
        public var description: String
    }

    public let options: Options

    public init(options: Options) { self.options = options }

    /// Parses what follows the command's name (`arguments` starts with it).
    public static func parse(_ arguments: ArraySlice<String>) -> Result<Options, UsageError> {
        guard let name = arguments.first else { return .failure(UsageError(description: "sluice: which control command?")) }
        var positional: [String] = []
        var path = ControlServer.defaultPath
        var json = false
        var interval = 1.0
        var count: Int?
        var last = 20
        var follow = false
        var httpOnly = false
        var rest = arguments.dropFirst()
        while let first = rest.first {
            rest.removeFirst()
            switch first {
            case "--control":
                guard let value = rest.first, !value.isEmpty else { return .failure(UsageError(description: "sluice \(name): --control needs the socket's path")) }
                rest.removeFirst()
                path = value
            case "--json":
                json = true
            case "--interval" where name == "top":
                guard let value = rest.first, let seconds = Double(value), seconds >= 0.1, seconds <= 3600 else {
                    return .failure(UsageError(description: "sluice top: --interval wants seconds, 0.1 to 3600"))
                }
                rest.removeFirst()
                interval = seconds
            case "--count" where name == "top", "--count" where name == "requests":
                guard let value = rest.first, let n = Int(value), n > 0 else {
                    return .failure(UsageError(description: "sluice \(name): --count wants a positive whole number"))
                }
                rest.removeFirst()
                count = n
            case "--last" where name == "requests":
                guard let value = rest.first, let n = Int(value), n >= 0, n <= ControlRouter.maximumRequestsLimit else {
                    return .failure(UsageError(description: "sluice requests: --last wants a whole number from 0 to \(ControlRouter.maximumRequestsLimit) (what Sluice keeps)"))
                }
                rest.removeFirst()
                last = n
            case "--follow" where name == "requests", "-f" where name == "requests":
                follow = true
            case "--http" where name == "requests":
                httpOnly = true
            default:
                if first.hasPrefix("-"), first.count > 1 {
                    return .failure(UsageError(description: "sluice \(name): unknown option '\(first)' (see sluice help)"))
                }
                positional.append(first)
            }
        }
        let action: Action
        switch (name, positional.count) {
        case ("status", 0): action = .status
        case ("flows", 0): action = .flows
        case ("reload", 0): action = .reload
        case ("top", 0): action = .top(interval: interval, count: count)
        case ("requests", 0):
            if count != nil, !follow {
                return .failure(UsageError(description: "sluice requests: --count counts what --follow prints; without --follow, say how many with --last N"))
            }
            action = .requests(last: last, follow: follow, count: count, httpOnly: httpOnly)
        case ("close", 1):
            guard let id = UInt64(positional[0]) else {
                return .failure(UsageError(description: "sluice close: a flow id is a number, as `sluice flows` lists it; got '\(positional[0])'"))
            }
            action = .close(id)
        case ("select", 2): action = .select(group: positional[0], member: positional[1])
        case ("close", 0): return .failure(UsageError(description: "sluice close: which flow? for example: sluice close 17 (ids from `sluice flows`)"))
        case ("close", _): return .failure(UsageError(description: "sluice close: one flow at a time; got \(positional.count) ids (\(positional.joined(separator: " ")))"))
        case ("select", _): return .failure(UsageError(description: "sluice select: want a group and a member, for example: sluice select Proxies proxy-b"))
        case ("status", _), ("flows", _), ("reload", _), ("top", _), ("requests", _):
            return .failure(UsageError(description: "sluice \(name): unexpected argument '\(positional[0])'"))
        default:
            return .failure(UsageError(description: "sluice: '\(name)' is not a control command"))
        }
        var options = Options(action: action)
        options.path = path
        options.json = json
        return .success(options)
    }

    /// Runs the command; `print` gets stdout lines, `complain` stderr lines.
    public func run(print: (String) -> Void, complain: (String) -> Void) -> Int32 {
        let client = ControlClient(path: options.path)
        do throws(ControlClient.Failure) {
            switch options.action {
            case .status:
                let stats = try client.request("GET", "/stats")
                let groups = try client.request("GET", "/groups")
                if options.json {
                    print("{\"stats\":\(stats.json),\"groups\":\(groups.json)}")
                } else {
                    for line in ControlFormat.status(stats.json) + ControlFormat.groups(groups.json) { print(line) }
                }
            case .flows:
                let reply = try client.request("GET", "/flows")
                if options.json { print(reply.json.description) } else { for line in ControlFormat.flows(reply.json) { print(line) } }
            case let .close(id):
                return report(try client.request("DELETE", "/flows/\(id)"), print: print, complain: complain)
            case let .select(group, member):
                var body = JSONWriter()
                body.beginObject()
                body.field("selected", member)
                body.endObject()
                return report(try client.request("PUT", "/groups/\(Self.percentEncoded(group))", body: body.text), print: print, complain: complain)
            case .reload:
                return report(try client.request("POST", "/reload", timeoutSeconds: ControlClient.reloadTimeoutSeconds), print: print, complain: complain)
            case let .top(interval, count):
                var round = 0
                while count.map({ round < $0 }) ?? true {
                    if round > 0 { ProcessControl.sleep(milliseconds: Int(interval * 1000)) }
                    round += 1
                    let stats = try client.request("GET", "/stats")
                    let flows = try client.request("GET", "/flows")
                    let recent = try client.request("GET", "/requests?limit=\(Self.topRecentLines)")
                    let finished = (recent.json["requests"]?.arrayValue ?? []).map(ControlFormat.request)
                    // On a terminal: clear the screen and home the cursor, then one frame;
                    // into a file or a pipe, frames follow each other, a blank line apart.
                    let clear = ProcessControl.isTerminal(1) ? "\u{1B}[H\u{1B}[2J" : (round > 1 ? "\n" : "")
                    let frame = ControlFormat.status(stats.json) + [""] + ControlFormat.flows(flows.json)
                        + (finished.isEmpty ? [] : ["", "finished last:"] + finished)
                    print(clear + frame.joined(separator: "\n"))
                }
            case let .requests(last, follow, count, httpOnly):
                try requests(client, last: last, follow: follow, count: count, httpOnly: httpOnly, print: print, complain: complain)
            }
            return 0
        } catch {
            complain(error.description)
            return 1
        }
    }

    /// The requests and connections `top` shows under the flows.
    static let topRecentLines = 5

    /// How long `requests --follow` asks Sluice to hold a look that finds
    /// nothing new (`/requests?wait=`): it answers as soon as a request
    /// finishes (within its 20 ms tick).
    static let followWaitMilliseconds = 2000
    /// How often it looks again at a Sluice that cannot wait (one from before 2026-12-07).
    static let followMilliseconds = 250

    /// `sluice requests`: the last few, then (following) each new one, a line
    /// each (`--json`: the flow log's line, as `{"id": N, "line": {...}}`).
    func requests(_ client: ControlClient, last: Int, follow: Bool, count: Int?, httpOnly: Bool,
                  print: (String) -> Void, complain: (String) -> Void) throws(ControlClient.Failure) {
        func kept(_ items: [JSONValue]) -> [JSONValue] {
            httpOnly ? items.filter { $0["line"]?["kind"]?.stringValue == "http" } : items
        }
        func show(_ items: [JSONValue], atMost limit: Int) -> Int {
            let shown = items.prefix(limit)
            for item in shown { print(options.json ? item.description : ControlFormat.request(item)) }
            return shown.count
        }
        func look(_ target: String) throws(ControlClient.Failure) -> JSONValue {
            let reply = try client.request("GET", target)
            guard reply.status == 200 else { throw ControlClient.Failure(description: reply.errorMessage) }
            return reply.json
        }
        // Sluice holds a look that finds nothing new until something comes, unless it is one that cannot.
        var waits = true
        func lookAfter(_ after: UInt64) throws(ControlClient.Failure) -> JSONValue {
            let target = "/requests?after=\(after)&limit=\(ControlRouter.maximumRequestsLimit)"
            if waits {
                let reply = try client.request("GET", target + "&wait=\(Self.followWaitMilliseconds)")
                if reply.status == 200 { return reply.json }
                guard reply.status == 400 else { throw ControlClient.Failure(description: reply.errorMessage) }
                waits = false
            }
            return try look(target)
        }
        // As `tail -n LAST -f | head -n COUNT`: the count includes the lines shown first.
        var shown = 0
        var after: UInt64
        var instance: String?
        if last > 0 {
            // With --http, the last N HTTP requests: connections between them do not count.
            let page = try look("/requests?limit=\(httpOnly ? ControlRouter.maximumRequestsLimit : last)")
            shown += show(Array(kept(page["requests"]?.arrayValue ?? []).suffix(last)), atMost: count ?? .max)
            after = UInt64(page["newest"]?.intValue ?? 0)
            instance = page["instance"]?.stringValue
        } else {
            let page = try look("/requests?limit=1")
            after = UInt64(page["newest"]?.intValue ?? 0)
            instance = page["instance"]?.stringValue
        }
        guard follow else { return }
        while count.map({ shown < $0 }) ?? true {
            let page = try lookAfter(after)
            let answering = page["instance"]?.stringValue
            if Self.isAnotherSluice(answering: answering, followed: instance, newest: UInt64(page["newest"]?.intValue ?? 0), after: after) {
                // Another Sluice answers on the socket now: its ids start again.
                complain("sluice requests: the Sluice on \(options.path) is a new one; following it from its first request")
                instance = answering
                after = 0
                continue
            }
            let missed = page["missed"]?.intValue ?? 0
            if missed > 0 {
                complain("sluice requests: \(missed) finished between two looks and are gone from Sluice's last \(RecentRequests.defaultCapacity)")
            }
            let items = page["requests"]?.arrayValue ?? []
            shown += show(kept(items), atMost: count.map { $0 - shown } ?? .max)
            if let id = items.last?["id"]?.intValue { after = UInt64(id) }
            if !waits, page["more"]?.boolValue != true { ProcessControl.sleep(milliseconds: Self.followMilliseconds) }
        }
    }

    /// Whether the Sluice answering a follower is not the one it followed:
    /// another `instance` (ids start again at 1 in every Sluice), or, from a
    /// Sluice that names none, a newest id below the last one seen.
    static func isAnotherSluice(answering: String?, followed: String?, newest: UInt64, after: UInt64) -> Bool {
        answering != followed || newest < after
    }

    /// A change's answer: its message on success, the error (and each line of a profile's errors) otherwise.
    func report(_ reply: ControlClient.Reply, print: (String) -> Void, complain: (String) -> Void) -> Int32 {
        if options.json { print(reply.json.description) }
        if reply.status == 200 {
            if !options.json { print(reply.json["message"]?.stringValue ?? "ok") }
            return 0
        }
        complain(reply.errorMessage)
        for line in reply.json["errors"]?.arrayValue ?? [] { complain(line.stringValue ?? line.description) }
        return 1
    }

    /// RFC 3986: a group name as one path segment.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A") ... UInt8(ascii: "Z"), UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "0") ... UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out += "%"
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 0xF)])
            }
        }
        return out
    }
}

/// The readable forms of the API's answers.
enum ControlFormat {
    static func status(_ stats: JSONValue) -> [String] {
        var lines: [String] = []
        let tunnel = stats["tunnel"] ?? .null
        func n(_ value: JSONValue?, _ name: String) -> Int { value?[name]?.intValue ?? 0 }
        let uptime = stats["uptime-seconds"]?.doubleValue ?? 0
        let profile = stats["profile"]?.stringValue ?? "the built-in default (everything DIRECT)"
        let open = stats["open"]
        if let proxy = stats["proxy"] {
            lines.append("Sluice proxy: up \(duration(uptime)), profile \(profile)")
            let listeners = stats["listeners"]
            let listening = [("SOCKS5", "socks5"), ("HTTP", "http")].compactMap { name, key in
                listeners?[key]?.stringValue.map { "\(name) on \($0)" }
            }
            lines.append("listening: " + (listening.isEmpty ? "-" : listening.joined(separator: ", ")))
            lines.append("open: \(n(open, "connections")) connections (\(n(open, "relaying")) relaying, \(n(open, "idle")) idle between requests, "
                + "\(n(open, "handshake")) in handshake, \(n(open, "sniffing") + n(open, "resolving") + n(open, "connecting") + n(open, "proxy-handshake")) connecting, "
                + "\(n(open, "associated")) UDP associations, \(n(open, "closing")) closing)")
            lines.append("traffic: \(bytes(n(proxy, "bytes-up"))) up, \(bytes(n(proxy, "bytes-down"))) down")
            lines.append("since start: \(n(proxy, "connections")) connections (\(n(proxy, "relayed")) relayed, \(n(proxy, "refused-by-rules")) refused by rules, "
                + "\(n(proxy, "answered-here")) requests answered by the profile), \(n(proxy, "associations")) UDP associations "
                + "(\(n(proxy, "datagrams-up")) datagrams up, \(n(proxy, "datagrams-down")) down)")
            lines.append("problems: \(n(proxy, "handshake-failures")) bad or unauthenticated requests (\(n(proxy, "auth-failures")) wrong credentials), "
                + "\(n(proxy, "failed")) unreachable, \(n(proxy, "errors")) errors, \(n(proxy, "datagrams-dropped")) datagrams dropped")
            lines += books(stats)
            return lines
        }
        lines.append("Sluice: up \(duration(uptime)), profile \(profile)")
        // Not a breakdown: sniffed flows have no upstream yet, and an HTTP
        // session may or may not have one open.
        lines.append("open: \(n(open, "tcp")) TCP flows relayed upstream, \(n(open, "sniffing")) being sniffed, \(n(open, "http-sessions")) HTTP sessions, \(n(open, "udp")) UDP sessions")
        lines.append("traffic: \(bytes(n(tunnel, "bytes-from-app"))) up, \(bytes(n(tunnel, "bytes-to-app"))) down; "
            + "\(n(tunnel, "packets-from-app")) packets in, \(n(tunnel, "packets-to-app")) out")
        let unreachable = n(tunnel, "tcp-unreachable")
        lines.append("since start: \(n(tunnel, "tcp-flows")) TCP flows relayed (besides \(n(tunnel, "tcp-refused")) refused, "
            + (unreachable > 0 ? "\(unreachable) unreachable, " : "") + "\(n(tunnel, "tcp-rejected")) rejected by rules, "
            + "\(n(tunnel, "tcp-answered")) answered locally), \(n(tunnel, "udp-sessions")) UDP sessions (besides \(n(tunnel, "udp-rejected")) rejected), \(n(tunnel, "echo-flows")) ping flows")
        lines.append("problems: \(n(tunnel, "malformed-packets")) malformed packets, \(n(tunnel, "upstream-errors")) upstream errors, \(n(tunnel, "tun-write-drops")) TUN write drops; "
            + "retransmissions: \(n(tunnel, "retransmission-timeouts")) timeouts, \(n(tunnel, "fast-retransmits")) fast, \(n(tunnel, "sack-retransmits")) SACK")
        lines += books(stats)
        return lines
    }

    /// The profile's [Statistics] books, a line per key.
    static func books(_ stats: JSONValue) -> [String] {
        func n(_ value: JSONValue?, _ name: String) -> Int { value?[name]?.intValue ?? 0 }
        var lines: [String] = []
        for book in stats["statistics"]?.arrayValue ?? [] {
            lines.append("statistics \(book["name"]?.stringValue ?? "?"):")
            let keys = book["keys"]?.arrayValue ?? []
            if keys.isEmpty { lines.append("  (no requests yet)") }
            for entry in keys {
                let status = entry["status"]
                let classes = (1 ... 5).map { "\($0)xx \(n(status, "\($0)xx"))" }.joined(separator: " ")
                lines.append("  \(entry["key"]?.stringValue ?? "?"): \(n(entry, "requests")) requests (\(classes)), \(n(entry, "failures")) failures, "
                    + "\(bytes(n(entry, "bytes-up"))) up, \(bytes(n(entry, "bytes-down"))) down")
            }
        }
        return lines
    }

    static func groups(_ reply: JSONValue) -> [String] {
        let groups = (reply["groups"]?.arrayValue ?? []).compactMap(ControlGroup.init)
        guard !groups.isEmpty else { return ["groups: none"] }
        var lines = ["groups:"]
        for group in groups {
            let members = group.members.map { member in
                (member.name == group.selected ? "*" : "") + member.name + (member.health == "unchecked" ? "" : " (\(member.health))")
            }
            lines.append("  \(group.name) (\(group.kind)): " + members.joined(separator: ", "))
        }
        return lines
    }

    static func flows(_ reply: JSONValue) -> [String] {
        let flows = (reply["flows"]?.arrayValue ?? []).compactMap(ControlFlow.init)
        // A PROCESS column only when an owner rule made the tunnel ask.
        let showsProcess = flows.contains { $0.process != nil }
        let header = ["ID", "PROTO", "APP"] + (showsProcess ? ["PROCESS"] : []) + ["DESTINATION", "DOMAIN", "ROUTE", "UP", "DOWN", "AGE", "STATE"]
        var rows = [header]
        for flow in flows {
            let domain = flow.domain.map { $0 + (flow.domainSource.map { " (\($0))" } ?? "") } ?? "-"
            rows.append([
                flow.id.map(String.init) ?? "-", flow.transport, "\(flow.appAddress).\(flow.appPort)",
            ] + (showsProcess ? [flow.process ?? "-"] : []) + [
                flow.destinationAddress.map { "\($0).\(flow.destinationPort.map(String.init) ?? "-")" } ?? "-", domain, flow.policy ?? flow.upstream ?? "-",
                flow.bytesUp.map(bytes) ?? "-", flow.bytesDown.map(bytes) ?? "-", flow.ageSeconds.map(duration) ?? "-", flow.state,
            ])
        }
        var widths = [Int](repeating: 0, count: header.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        var lines = rows.map { row in
            var line = ""
            for (i, cell) in row.enumerated() {
                line += cell
                if i < row.count - 1 { line += String(repeating: " ", count: widths[i] - cell.count + 2) }
            }
            return line
        }
        lines.append("\(flows.count) open flow\(flows.count == 1 ? "" : "s")")
        return lines
    }

    /// One finished request or connection, on one line:
    ///
    ///     05:12:03.123  #4.0 GET http://api.test/v1/users  200  3.2 ms  1.2 KiB  DIRECT  (p.conf:12: DOMAIN,api.test)
    ///     05:12:03.140  #4 TCP 10.233.0.1.40000 > 198.18.0.5.80 (api.test)  closed  0.5 s  517 B up, 4.1 KiB down  DIRECT  (p.conf:12: DOMAIN,api.test)
    static func request(_ item: JSONValue) -> String {
        let line = item["line"] ?? .null
        // The start's time of day, to the millisecond, from "2026-12-07T05:12:03.123456Z".
        let start = line["start"]?.stringValue ?? ""
        let time = start.split(separator: "T").last.map { String($0.prefix(12)) } ?? "?"
        func milliseconds(_ value: Double?) -> String {
            guard let value else { return "-" }
            if value < 10 { return "\(Double(Int(value * 10)) / 10) ms" }
            if value < 10_000 { return "\(Int(value.rounded())) ms" }
            return "\(Double(Int(value / 100)) / 10) s"
        }
        var parts: [String]
        let connection = line["connection"]?.intValue.map(String.init) ?? "?"
        if line["kind"]?.stringValue == "http" {
            let index = line["request"]?.intValue.map(String.init) ?? "?"
            parts = [time, "#\(connection).\(index) \(line["method"]?.stringValue ?? "?") \(line["url"]?.stringValue ?? "?")",
                     line["status"]?.intValue.map(String.init) ?? "no response",
                     milliseconds(line["timings"]?["totalMs"]?.doubleValue),
                     bytes(line["responseBodyBytes"]?.intValue ?? 0)]
            if let retries = line["retries"]?.intValue, retries > 0 { parts.append("\(retries) \(retries == 1 ? "retry" : "retries")") }
        } else {
            let transport = (line["transport"]?.stringValue ?? "?").uppercased()
            var what = "#\(connection) \(transport) \(line["source"]?.stringValue ?? "?").\(line["sourcePort"]?.intValue ?? 0)"
                + " > \(line["destination"]?.stringValue ?? "?").\(line["destinationPort"]?.intValue ?? 0)"
            if let domain = line["domain"]?.stringValue { what += " (\(domain))" }
            if let process = line["process"]?.stringValue { what += " by \(process)" + (line["pid"]?.intValue.map { "[\($0)]" } ?? "") }
            let duration = line["durationMs"]?.doubleValue
            parts = [time, what, line["status"]?.stringValue ?? "?", milliseconds(duration),
                     "\(bytes(line["bytesUp"]?.intValue ?? 0)) up, \(bytes(line["bytesDown"]?.intValue ?? 0)) down"]
        }
        parts.append(line["policy"]?.stringValue ?? line["upstream"]?.stringValue ?? "-")
        if let rule = line["rule"]?.stringValue { parts.append("(\(rule))") }
        var text = parts.joined(separator: "  ")
        if let error = line["error"]?.stringValue { text += ": " + error }
        return text
    }

    static func bytes(_ n: Int) -> String {
        if n < 1024 { return "\(n) B" }
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(n) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 { value /= 1024; unit += 1 }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds)
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)m\(total % 60)s" }
        return "\(total / 3600)h\(total / 60 % 60)m"
    }
}
