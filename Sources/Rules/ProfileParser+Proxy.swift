import Wire

/// [Proxy] and [Proxy Group].
extension ProfileBuilder {
    static let proxyKinds = ["socks5", "http", "direct", "reject", "reject-rst", "reject-drop", "reject-tinygif"]
    /// Surge proxy kinds Sluice does not speak: a pasted profile gets told so.
    static let foreignProxyKinds = ["https", "socks5-tls", "ss", "vmess", "trojan", "snell", "wireguard", "tuic",
                                    "hysteria2", "ssh", "external", "smart"]

    mutating func readProxy(_ line: ProfileLexer.Line) {
        guard let (name, nameColumn, raw, column) = keyValueLine(line, example: "corp = socks5, proxy.test, 1080") else { return }
        let fields: [ProfileLexer.Field]
        switch ProfileLexer.commaFields(raw, column: column) {
        case let .success(list): fields = list
        case let .failure(failure): report(failure, line: line.number); return
        }
        let n = line.number
        guard define(name, line: n, column: nameColumn) else { return }
        guard let kindField = fields.first, !kindField.text.isEmpty else {
            error(n, column, "proxy '\(name)' has no kind", hint: "write \(name) = socks5, HOST, PORT (kinds: \(Self.proxyKinds.joined(separator: ", ")))")
            return
        }
        let kindText = kindField.text.lowercased()
        var kind: ProxyKind?
        switch kindText {
        case "socks5", "http":
            guard let server = readServer(name: name, kind: kindText, fields: Array(fields.dropFirst()), line: n, column: kindField.column) else { return }
            kind = kindText == "socks5" ? .socks5(server) : .http(server)
        case "reject":
            kind = readRejectProxy(fields: Array(fields.dropFirst()), line: n)
        case "direct", "reject-rst", "reject-drop", "reject-tinygif":
            if fields.count > 1 {
                error(n, fields[1].column, "proxy kind \(kindText) takes no parameters", hint: "write \(name) = \(kindText)")
                return
            }
            kind = kindText == "direct" ? .direct : kindText == "reject-rst" ? .rejectRST : kindText == "reject-drop" ? .rejectDrop : .rejectTinyGIF
        default:
            if Self.foreignProxyKinds.contains(kindText) {
                error(n, kindField.column, "proxy kind '\(kindField.text)' is not supported",
                      hint: "Sluice relays through socks5 and http proxies; kinds: \(Self.proxyKinds.joined(separator: ", "))")
            } else {
                error(n, kindField.column, "unknown proxy kind '\(kindField.text)'", hint: Suggestion.hint(for: kindText, in: Self.proxyKinds))
            }
            return
        }
        if let kind { proxies.append(ProxyDefinition(name: name, kind: kind, line: n)) }
    }

    /// Surge's proxy parameters that Sluice does not apply, and why: a pasted
    /// proxy line loads with a warning instead of failing the profile.
    static let surgeProxyParameters: [String: String] = [
        "tfo": "Sluice's connections use the kernel's own TCP options",
        "test-url": "groups check their members with their url= (or [General] proxy-test-url)",
        "test-timeout": "groups time their checks with their timeout=",
        "interface": "Sluice's sockets take the host's routes (run --tun marks them)",
        "allow-other-interface": "Sluice's sockets take the host's routes",
        "ecn": "Sluice's connections use the kernel's own TCP options",
        "no-error-alert": "Sluice has no alerts; failures are in the flow log",
        "ip-version": "Sluice connects to whatever address the proxy's name resolves to",
        "always-use-connect": "Sluice's http proxies forward plain HTTP in absolute form, and use CONNECT for the rest",
        "underlying-proxy": "Sluice does not chain proxies inside a [Proxy] line; chain sluice proxy listeners instead",
    ]

    /// Surge's group parameters that change how a group looks or is checked,
    /// not who its members are: warnings, so the group loads. (Those that
    /// add members, policy-path and the like, stay errors: the group would
    /// silently lose them.)
    static let surgeGroupParameters: [String: String] = [
        "hidden": "Sluice shows every group (sluice status, the control API)",
        "icon-url": "Sluice has no icons",
        "no-alert": "Sluice has no alerts; switches are logged",
        "persistent": "Sluice keeps a select group's choice across reloads, not across restarts",
        "evaluate-before-use": "before its first check passes, a group takes its first member not known to be down",
    ]

    /// `HOST, PORT[, key=value...]` of socks5 and http proxies.
    mutating func readServer(name: String, kind: String, fields: [ProfileLexer.Field], line: Int, column: Int) -> ProxyServer? {
        guard fields.count >= 2, ProfileLexer.keyValue(fields[0]) == nil, ProfileLexer.keyValue(fields[1]) == nil else {
            error(line, column, "\(kind) proxy '\(name)' needs a server and a port", hint: "write \(name) = \(kind), HOST, PORT")
            return nil
        }
        var host = fields[0].text
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard Self.isHostName(host, wildcard: false) || IPAddress(host) != nil else {
            error(line, fields[0].column, "'\(fields[0].text)' is not a host name or an IP address", hint: "write the proxy server as proxy.test, 10.0.0.1 or fd00::1")
            return nil
        }
        guard let port = integer(fields[1].text, 1 ... 65535, what: "port", line: line, column: fields[1].column) else { return nil }
        var server = ProxyServer(host: host, port: UInt16(port))
        let keys = kind == "socks5" ? ["username", "password", "udp-relay"] : ["username", "password"]
        var seen = Set<String>()
        var ok = true
        var rest = fields.dropFirst(2)
        // Surge's older form: `socks5, HOST, PORT, USERNAME, PASSWORD`.
        if rest.count >= 2, ProfileLexer.keyValue(rest[rest.startIndex]) == nil, ProfileLexer.keyValue(rest[rest.startIndex + 1]) == nil {
            server.username = rest[rest.startIndex].text
            server.password = rest[rest.startIndex + 1].text
            seen.formUnion(["username", "password"])
            rest = rest.dropFirst(2)
        }
        for field in rest {
            guard let (key, value, valueColumn) = ProfileLexer.keyValue(field) else {
                error(line, field.column, "unexpected '\(field.text)' after the port", hint: "parameters are key=value: \(keys.joined(separator: ", "))")
                ok = false; continue
            }
            if let reason = Self.surgeProxyParameters[key] {
                surgeOnly(key, line: line, column: field.column, reason: reason)
                continue
            }
            guard keys.contains(key) else {
                if key == "udp-relay" {
                    error(line, field.column, "udp-relay applies only to socks5 proxies", hint: "http proxies carry TCP only; UDP goes DIRECT")
                } else {
                    error(line, field.column, "unknown parameter '\(key)' for a \(kind) proxy", hint: Suggestion.hint(for: key, in: keys))
                }
                ok = false; continue
            }
            guard seen.insert(key).inserted else {
                error(line, field.column, "'\(key)' is given twice", hint: "keep one of them"); ok = false; continue
            }
            switch key {
            case "username": server.username = value
            case "password": server.password = value
            default:
                if let flag = boolean(value, what: "udp-relay", line: line, column: valueColumn) { server.udpRelay = flag } else { ok = false }
            }
        }
        if (server.username == nil) != (server.password == nil) {
            error(line, column, "proxy '\(name)' has a \(server.username == nil ? "password" : "username") but no \(server.username == nil ? "username" : "password")",
                  hint: "give both username= and password=, or neither")
            ok = false
        }
        return ok ? server : nil
    }

    /// `reject[, status-code=N, body="..."]`.
    mutating func readRejectProxy(fields: [ProfileLexer.Field], line: Int) -> ProxyKind? {
        var status = 403, body = ""
        var seen = Set<String>()
        var ok = true
        for field in fields {
            guard let (key, value, valueColumn) = ProfileLexer.keyValue(field) else {
                error(line, field.column, "unexpected '\(field.text)' in a reject proxy", hint: "parameters are status-code=N and body=\"TEXT\"")
                ok = false; continue
            }
            guard seen.insert(key).inserted else { error(line, field.column, "'\(key)' is given twice", hint: "keep one of them"); ok = false; continue }
            switch key {
            case "status-code":
                if let v = integer(value, 100 ... 599, what: "status-code", line: line, column: valueColumn) { status = v } else { ok = false }
            case "body":
                body = value
            default:
                error(line, field.column, "unknown parameter '\(key)' for a reject proxy", hint: Suggestion.hint(for: key, in: ["status-code", "body"]))
                ok = false
            }
        }
        return ok ? .reject(status: status, body: body) : nil
    }

    // MARK: [Proxy Group]

    static let groupKinds = ProxyGroupKind.allCases.map(\.rawValue)
    static let foreignGroupKinds = ["load-balance", "ssid", "subnet", "smart"]

    mutating func readGroup(_ line: ProfileLexer.Line) {
        guard let (name, nameColumn, raw, column) = keyValueLine(line, example: "pick = select, corp-socks, DIRECT") else { return }
        let fields: [ProfileLexer.Field]
        switch ProfileLexer.commaFields(raw, column: column) {
        case let .success(list): fields = list
        case let .failure(failure): report(failure, line: line.number); return
        }
        let n = line.number
        guard define(name, line: n, column: nameColumn) else { return }
        guard let kindField = fields.first, !kindField.text.isEmpty else {
            error(n, column, "group '\(name)' has no kind", hint: "write \(name) = select, MEMBER, ... (kinds: \(Self.groupKinds.joined(separator: ", ")))")
            return
        }
        guard let kind = ProxyGroupKind(rawValue: kindField.text.lowercased()) else {
            if Self.foreignGroupKinds.contains(kindField.text.lowercased()) {
                error(n, kindField.column, "group kind '\(kindField.text)' is not supported", hint: "kinds: \(Self.groupKinds.joined(separator: ", "))")
            } else {
                error(n, kindField.column, "unknown group kind '\(kindField.text)'", hint: Suggestion.hint(for: kindField.text, in: Self.groupKinds))
            }
            return
        }
        var group = ProxyGroupDefinition(name: name, kind: kind, members: [], line: n)
        let keys = kind == .select ? [] : kind == .fallback ? ["url", "interval", "timeout"] : ["url", "interval", "timeout", "tolerance"]
        var seen = Set<String>()
        var ok = true
        var memberUses: [(String, Int)] = []
        for field in fields.dropFirst() {
            guard let (key, value, valueColumn) = ProfileLexer.keyValue(field) else {
                let member = field.text
                if member.isEmpty { error(n, field.column, "empty member in group '\(name)'", hint: "remove the extra comma"); ok = false; continue }
                if group.members.contains(member) {
                    error(n, field.column, "'\(member)' is listed twice in group '\(name)'", hint: "list each member once"); ok = false; continue
                }
                group.members.append(member)
                memberUses.append((member, field.column))
                continue
            }
            if let reason = Self.surgeGroupParameters[key] {
                surgeOnly(key, line: n, column: field.column, reason: reason)
                continue
            }
            guard keys.contains(key) else {
                if kind == .select, ["url", "interval", "timeout", "tolerance"].contains(key) {
                    error(n, field.column, "a select group has no \(key)", hint: "select groups are not health-checked; use fallback or url-test for that")
                } else if key == "tolerance" {
                    error(n, field.column, "tolerance applies only to url-test groups", hint: "fallback takes the first healthy member in order")
                } else {
                    error(n, field.column, "unknown parameter '\(key)' for a \(kind.rawValue) group",
                          hint: keys.isEmpty ? "a select group takes only member names" : Suggestion.hint(for: key, in: keys))
                }
                ok = false; continue
            }
            guard seen.insert(key).inserted else { error(n, field.column, "'\(key)' is given twice", hint: "keep one of them"); ok = false; continue }
            switch key {
            case "url":
                guard value.lowercased().hasPrefix("http://"), value.count > 7 else {
                    error(n, valueColumn, "health-check url must be an http:// URL, got '\(value)'",
                          hint: "Sluice checks proxies with a plain HTTP GET, e.g. http://health.test/generate_204")
                    ok = false; continue
                }
                guard checkHeaderText(value, what: "url", line: n, column: valueColumn) else { ok = false; continue }
                group.url = value
            case "interval":
                if let v = integer(value, 1 ... 86400, what: "interval", line: n, column: valueColumn) { group.interval = v } else { ok = false }
            case "timeout":
                if let v = integer(value, 1 ... 300, what: "timeout", line: n, column: valueColumn) { group.timeout = v } else { ok = false }
            default:
                if let v = integer(value, 0 ... 60000, what: "tolerance", line: n, column: valueColumn) { group.tolerance = v } else { ok = false }
            }
        }
        if group.members.isEmpty {
            error(n, kindField.column, "group '\(name)' has no members", hint: "list proxies, groups or built-in policies after \(kind.rawValue),")
            ok = false
        }
        if kind != .select, ok {
            // Filled from [General] proxy-test-url and test-timeout at the end, wherever [General] is.
            if group.url == nil { groupsWithoutURL[name] = (n, kindField.column) }
            if !seen.contains("timeout") { groupsWithDefaultTimeout.insert(name) }
        }
        for (member, memberColumn) in memberUses { usePolicy(member, line: n, column: memberColumn, context: "group '\(name)'") }
        if ok { groups.append(group) }
    }
}
