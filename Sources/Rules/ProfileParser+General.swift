import Wire

/// [General], [Host] and [Capture]: `key = value` sections of settings.
extension ProfileBuilder {
    static let generalKeys = ["loglevel", "dns-mode", "dns-server", "fake-ip-range", "mtu", "routing-mark", "geoip-database", "asn-database",
                              "always-real-ip", "ipv6", "exclude-simple-hostnames", "proxy-test-url", "test-timeout",
                              "socks5-listen", "http-listen", "body-rewrite-limit"]
    /// Surge's [General] keys that mean nothing to Sluice, and why: a pasted
    /// Surge profile loads, each of these said once as a warning.
    static let surgeOnlyKeys: [String: String] = [
        "skip-proxy": "it exempts hosts from the system proxy setting of macOS and iOS; use [Rule] lines (IP-CIDR,...,DIRECT) or run --tun --exclude",
        "bypass-system": "it belongs to the system proxy setting of macOS and iOS",
        "tun-excluded-routes": "give the routes to run --tun --exclude",
        "tun-included-routes": "Sluice's whole-host mode routes everything unmarked; narrow it with run --tun --exclude",
        "internet-test-url": "Sluice checks proxies only (proxy-test-url), not the way out without one",
        "hijack-dns": "run --tun --dns fake answers every DNS query that enters the TUN",
        "encrypted-dns-server": "Sluice asks resolvers over UDP and TCP; list them in dns-server",
        "encrypted-dns-follow-outbound-mode": "Sluice asks resolvers over UDP and TCP",
        "encrypted-dns-skip-cert-verification": "Sluice asks resolvers over UDP and TCP",
        "doh-server": "Sluice asks resolvers over UDP and TCP; list them in dns-server",
        "allow-wifi-access": "give sluice proxy a non-loopback --listen (with --auth)",
        "wifi-access-http-port": "give sluice proxy --http-listen",
        "wifi-access-socks5-port": "give sluice proxy --listen",
        "external-controller-access": "Sluice's control API is its Unix socket (docs/control.md)",
        "http-api": "Sluice's control API is its Unix socket (docs/control.md)",
        "http-api-tls": "Sluice's control API is its Unix socket (docs/control.md)",
        "http-api-web-dashboard": "sluice top shows the flows",
        "show-error-page-for-reject": "REJECT answers HTTP with its status and body",
        "wifi-assist": "it is an iOS setting", "all-hybrid": "it is an iOS setting", "allow-hotspot-access": "it is an iOS setting",
        "include-all-networks": "it is an iOS setting", "include-local-networks": "it is an iOS setting",
        "include-apns": "it is an iOS setting", "include-cellular-services": "it is an iOS setting",
        "compatibility-mode": "it is an iOS setting", "hide-vpn-icon": "it is an iOS setting",
        "enhanced-mode-by-rule": "it is a macOS setting", "replica": "it is a macOS setting",
        "read-etc-hosts": "Sluice's DNS answers [Host]; the host's resolvers read /etc/hosts themselves",
        "use-local-host-item-for-proxy": "proxies get names, resolved where they run",
        "udp-policy-not-supported-behaviour": "a UDP flow whose policy cannot carry UDP goes DIRECT, as live (docs/profile.md)",
        "geoip-maxmind-url": "name a local file with geoip-database",
        "disable-geoip-db-auto-update": "Sluice reads geoip-database once per load",
        "ipv6-vif": "Sluice's TUN always has an IPv6 address",
        "network-framework": "it is a macOS setting",
        "loglevel-file": "Sluice logs to stderr, and flows with --flow-log",
    ]

    mutating func readGeneral(_ line: ProfileLexer.Line) {
        guard let (key, keyColumn, raw, column) = keyValueLine(line, example: "loglevel = info") else { return }
        if let reason = Self.surgeOnlyKeys[key] {
            surgeOnly(key, line: line.number, column: keyColumn, reason: reason)
            return
        }
        guard Self.generalKeys.contains(key) else {
            error(line.number, keyColumn, "unknown key '\(key)' in [General]", hint: Suggestion.hint(for: key, in: Self.generalKeys))
            return
        }
        guard firstTime(key, section: .general, line: line.number, column: keyColumn) else { return }
        let value = ProfileLexer.unquote(raw)
        let n = line.number
        switch key {
        case "loglevel":
            // Surge's levels are verbose, info, notify and warning.
            let surge: [String: LogLevel] = ["verbose": .debug, "notify": .info]
            if let level = LogLevel(rawValue: value.lowercased()) ?? surge[value.lowercased()] {
                general.logLevel = level
            } else {
                error(n, column, "unknown loglevel '\(value)'", hint: Suggestion.hint(for: value, in: LogLevel.allCases.map(\.rawValue)))
            }
        case "dns-mode":
            if let mode = DNSMode(rawValue: value.lowercased()) {
                general.dnsMode = mode
            } else {
                error(n, column, "unknown dns-mode '\(value)'", hint: Suggestion.hint(for: value, in: DNSMode.allCases.map(\.rawValue)))
            }
        case "dns-server":
            readDNSServers(raw, line: n, column: column)
        case "fake-ip-range":
            guard let prefix = cidr4(value, line: n, column: column, what: "fake-ip-range") else { return }
            guard (12 ... 30).contains(prefix.length) else {
                error(n, column, "fake-ip-range must be a /12 to a /30, got /\(prefix.length)",
                      hint: "198.18.0.0/15 (RFC 2544's benchmarking range) is the default")
                return
            }
            general.fakeIPRange = prefix
        case "mtu":
            general.mtu = integer(value, 1280 ... 65535, what: "mtu", line: n, column: column)
        case "routing-mark":
            readRoutingMark(value, line: n, column: column)
        case "geoip-database":
            general.geoIPDatabase = value.isEmpty ? nil : resolvePath(value)
            geoIP = readDatabase(value, key: key, example: "GeoLite2-Country.mmdb", line: n, column: column)
        case "asn-database":
            general.asnDatabase = value.isEmpty ? nil : resolvePath(value)
            asn = readDatabase(value, key: key, example: "GeoLite2-ASN.mmdb", line: n, column: column)
        case "always-real-ip":
            readRealIPNames(raw, line: n, column: column)
        case "ipv6":
            if let on = boolean(value, what: "ipv6", line: n, column: column) { general.ipv6 = on }
        case "exclude-simple-hostnames":
            if let on = boolean(value, what: "exclude-simple-hostnames", line: n, column: column) { general.excludeSimpleHostnames = on }
        case "proxy-test-url":
            guard value.lowercased().hasPrefix("http://"), value.count > 7 else {
                warning(n, column, "proxy-test-url '\(value)' is left out: Sluice checks proxies with a plain HTTP GET",
                        hint: "give an http:// URL here, or url=http://... on each group")
                return
            }
            guard checkHeaderText(value, what: "proxy-test-url", line: n, column: column) else { return }
            general.proxyTestURL = value
        case "test-timeout":
            general.testTimeout = integer(value, 1 ... 300, what: "test-timeout", line: n, column: column)
        case "body-rewrite-limit":
            // Bodies are held whole, in memory, one per connection that has one: 64 MiB at most.
            if let limit = integer(value, 1024 ... 64 << 20, what: "body-rewrite-limit", line: n, column: column) {
                general.bodyRewriteLimit = limit
            }
        case "socks5-listen", "http-listen":
            // ADDRESS:PORT, [V6]:PORT; `sluice proxy` checks the address when it binds it.
            var host = value.lastIndex(of: ":").map { value[..<$0] } ?? ""
            if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
            guard let colon = value.lastIndex(of: ":"), let port = UInt16(value[value.index(after: colon)...]), port > 0,
                  IPAddress(String(host)) != nil else {
                error(n, column, "\(key) wants ADDRESS:PORT, got '\(value)'", hint: "write 127.0.0.1:6152, or [::1]:6152")
                return
            }
            if key == "http-listen" { general.httpListen = value } else { general.socksListen = value }
        default:
            break
        }
    }

    mutating func readDNSServers(_ raw: Substring, line: Int, column: Int) {
        let fields: [ProfileLexer.Field]
        switch ProfileLexer.commaFields(raw, column: column) {
        case let .success(list): fields = list
        case let .failure(failure): report(failure, line: line); return
        }
        if fields.isEmpty {
            error(line, column, "dns-server is empty", hint: "list resolver addresses, or write system for the host's")
            return
        }
        var servers: [IPAddress] = []
        for field in fields {
            let text = field.text
            if text.lowercased() == "system" {
                if fields.count > 1 {
                    // Surge's profiles often end the list with it, as a last resort.
                    warning(line, field.column, "'system' among addresses in dns-server is left out: the listed resolvers are asked",
                            hint: "write system alone for the host's resolvers")
                }
                continue
            }
            guard let address = IPAddress(text) else {
                error(line, field.column, "dns-server '\(text)' is not an IP address",
                      hint: "write addresses such as 10.0.0.53 or fd00::53, separated by commas, or system")
                continue
            }
            servers.append(address)
        }
        general.dnsServers = servers
    }

    /// Groups without url= or timeout= take [General]'s proxy-test-url and
    /// test-timeout, as in Surge; without a proxy-test-url such a group is an error.
    mutating func applyGroupDefaults() {
        for i in groups.indices {
            let name = groups[i].name
            if let (line, column) = groupsWithoutURL[name] {
                if let url = general.proxyTestURL {
                    groups[i].url = url
                } else {
                    error(line, column, "\(groups[i].kind.rawValue) group '\(name)' needs url=",
                          hint: "add url=http://HOST/PATH for its health checks (or proxy-test-url in [General])")
                }
            }
            if let timeout = general.testTimeout, groupsWithDefaultTimeout.contains(name) { groups[i].timeout = timeout }
        }
    }

    /// always-real-ip: names and `*.` wildcards; Surge's wildcards inside a
    /// name (`xbox.*.microsoft.com`) are said and left out.
    mutating func readRealIPNames(_ raw: Substring, line: Int, column: Int) {
        let fields: [ProfileLexer.Field]
        switch ProfileLexer.commaFields(raw, column: column) {
        case let .success(list): fields = list
        case let .failure(failure): report(failure, line: line); return
        }
        for field in fields {
            var name = field.text.lowercased()
            if name.hasSuffix(".") { name.removeLast() }
            guard Self.isHostName(name, wildcard: true) else {
                warning(line, field.column, "always-real-ip entry '\(field.text)' is left out",
                        hint: "Sluice takes names and *.name wildcards here; a * inside a name is Surge's alone")
                continue
            }
            general.realIPNames.append(name)
        }
    }

    /// A MaxMind DB file (GeoLite2-Country.mmdb, GeoLite2-ASN.mmdb, DB-IP's
    /// lite databases), read now: GEOIP and IP-ASN rules need it to load.
    mutating func readDatabase(_ value: String, key: String, example: String, line n: Int, column: Int) -> MaxMindDatabase? {
        let hint = "name a MaxMind DB file (.mmdb), such as \(example); a relative path starts at the profile's folder"
        guard !value.isEmpty else {
            error(n, column, "\(key) is empty", hint: hint)
            return nil
        }
        let path = resolvePath(value)
        let bytes: [UInt8]
        switch readFile(path) {
        case let .bytes(contents): bytes = contents
        case let .text(text): bytes = Array(text.utf8)
        case let .unreadable(reason):
            error(n, column, "cannot read the \(key == "asn-database" ? "ASN" : "GeoIP") database \(path): \(reason)", hint: hint)
            return nil
        }
        do {
            return try MaxMindDatabase(bytes)
        } catch {
            self.error(n, column, "\(path) is not a MaxMind DB file: \(error)", hint: hint)
            return nil
        }
    }

    mutating func readRoutingMark(_ value: String, line: Int, column: Int) {
        let lowered = value.lowercased()
        let parsed = lowered.hasPrefix("0x") ? UInt32(lowered.dropFirst(2), radix: 16) : UInt32(lowered)
        guard let mark = parsed, !lowered.hasPrefix("+"), !lowered.hasPrefix("-"), !lowered.hasPrefix("0x+"), !lowered.hasPrefix("0x-") else {
            error(line, column, "routing-mark must be a 32-bit number, got '\(value)'", hint: "write it in decimal or as 0x hex, e.g. 0x2a")
            return
        }
        general.routingMark = mark
    }

    /// An IPv4 network; host bits set are a warning (the network is what counts).
    /// A rule may name one address without a length, as Surge reads it (/32).
    mutating func cidr4(_ text: String, line: Int, column: Int, what: String) -> IPv4Prefix? {
        let bare = !text.contains("/")
        if bare, what != "IP-CIDR", IPAddress(text) != nil {
            error(line, column, "\(what) '\(text)' has no prefix length", hint: "write \(text)/\(text.contains(":") ? 128 : 32) for one address")
            return nil
        }
        guard let prefix = IPv4Prefix(text) else {
            if IPv6Prefix(text) != nil {
                error(line, column, "\(what) '\(text)' is IPv6", hint: what == "IP-CIDR" ? "use IP-CIDR6 for IPv6 networks" : "write an IPv4 network such as 198.18.0.0/15")
            } else {
                error(line, column, "\(what) '\(text)' is not an IPv4 network", hint: "write ADDRESS/LENGTH, e.g. 10.0.0.0/8")
            }
            return nil
        }
        if !bare, prefix.description != text {
            warning(line, column, "\(what) '\(text)' has host bits set; it means \(prefix)", hint: "write \(prefix)")
        }
        return prefix
    }

    mutating func cidr6(_ text: String, line: Int, column: Int, what: String) -> IPv6Prefix? {
        if !text.contains("/"), what != "IP-CIDR6", IPAddress(text) != nil {
            error(line, column, "\(what) '\(text)' has no prefix length", hint: "write \(text)/\(text.contains(":") ? 128 : 32) for one address")
            return nil
        }
        guard let prefix = IPv6Prefix(text) else {
            if IPv4Prefix(text) != nil {
                error(line, column, "\(what) '\(text)' is IPv4", hint: "use IP-CIDR for IPv4 networks")
            } else {
                error(line, column, "\(what) '\(text)' is not an IPv6 network", hint: "write ADDRESS/LENGTH, e.g. fd00::/8")
            }
            return nil
        }
        let address = IPv6Address(text.split(separator: "/")[0])
        if address != prefix.network {
            warning(line, column, "\(what) '\(text)' has host bits set; it means \(prefix)", hint: "write \(prefix)")
        }
        return prefix
    }

    // MARK: [Host]

    mutating func readHost(_ line: ProfileLexer.Line) {
        guard let (key, keyColumn, raw, column) = keyValueLine(line, example: "origin.test = 10.0.0.2") else { return }
        var name = key.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard Self.isHostName(name, wildcard: true) else {
            error(line.number, keyColumn, "'\(key)' is not a host name",
                  hint: "write a name such as origin.test, or *.test for every name under test")
            return
        }
        let text = ProfileLexer.unquote(raw)
        let value: HostEntry.Value
        if let address = IPAddress(text) {
            value = .addresses([address])
        } else if text.contains(",") {
            // A dual-stack name: `10.0.0.2, fd00::2`.
            var addresses: [IPAddress] = []
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                let item = String(part.trimmingBlanks())
                guard let address = IPAddress(item) else {
                    error(line.number, column, "'\(item)' is not an IP address",
                          hint: "a name's addresses are separated by commas (dual.test = 10.0.0.2, fd00::2); an alias or server: line takes one value")
                    return
                }
                if !addresses.contains(address) { addresses.append(address) }
            }
            value = .addresses(addresses)
        } else if text.lowercased().hasPrefix("server:") {
            let serverText = String(text.dropFirst("server:".count))
            guard let server = HostServer(serverText) else {
                error(line.number, column, "'\(serverText)' is not a DNS server",
                      hint: "write server:ADDRESS (port 53), server:ADDRESS:PORT ([ADDRESS]:PORT for IPv6), or server:system for the host's resolvers")
                return
            }
            value = .server(server)
        } else {
            var target = text.lowercased()
            if target.hasSuffix(".") { target.removeLast() }
            // Digits and dots are no host name (RFC 1123 §2.1: a name's last label is never
            // all digits): a mistyped address, which was taken for an alias and asked of the DNS.
            if target.contains("."), target.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }) {
                error(line.number, column, "'\(text)' is not an IP address",
                      hint: "an IPv4 address is four numbers from 0 to 255, such as 10.0.0.2; an IPv6 one is written as fd00::2")
                return
            }
            guard Self.isHostName(target, wildcard: false) else {
                error(line.number, column, "'\(text)' is not an IP address, a host name or server:ADDRESS",
                      hint: "[Host] maps a name to an address (origin.test = 10.0.0.2), to another name it answers as "
                          + "(alias.test = origin.test), or to the DNS server that resolves it (*.corp.test = server:10.0.0.53)")
                return
            }
            guard target != name else {
                error(line.number, column, "'\(name)' is an alias of itself", hint: "map it to an address or to another name")
                return
            }
            value = .alias(target)
        }
        if let first = hostLines[name] {
            error(line.number, keyColumn, "host '\(name)' is already mapped at line \(first)", hint: "keep one of the two lines")
            return
        }
        hostLines[name] = line.number
        hosts.append(HostEntry(name: name, value: value, line: line.number))
    }

    /// An alias chain that comes back to a name it passed, or runs longer
    /// than `Profile.maximumAliasChain`, is an error at its first line.
    mutating func checkHostAliases() {
        for entry in hosts {
            guard case .alias = entry.value else { continue }
            var seen: [String] = [entry.name]
            var current = entry
            while case let .alias(target) = current.value {
                guard let next = hosts.entry(for: target) else { break }
                if seen.contains(next.name) || seen.count > Profile.maximumAliasChain {
                    error(entry.line, nil, "the alias chain from '\(entry.name)' loops (\((seen + [next.name]).joined(separator: " → ")))",
                          hint: "end the chain at an address, a server: line, or a name [Host] does not map")
                    break
                }
                seen.append(next.name)
                current = next
            }
        }
    }

    /// Letters, digits, '-', '_' and dots between non-empty labels; `*.` first when allowed.
    static func isHostName(_ name: String, wildcard: Bool) -> Bool {
        isHostName(Substring(name), wildcard: wildcard)
    }

    static func isHostName(_ name: Substring, wildcard: Bool) -> Bool {
        var body = name
        if wildcard, body.hasPrefix("*.") { body = body.dropFirst(2) }
        guard !body.isEmpty, body.utf8.count <= 253 else { return false }
        // One pass over the bytes (a domain set may hold a hundred thousand names).
        var labelLength = 0
        for c in body.utf8 {
            if c == UInt8(ascii: ".") {
                guard labelLength > 0 else { return false }
                labelLength = 0
                continue
            }
            guard (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || c == 0x2D || c == 0x5F else { return false }
            labelLength += 1
            guard labelLength <= 63 else { return false }
        }
        return labelLength > 0
    }

    // MARK: [Capture]

    static let captureKeys = ["pcap", "filter", "snaplen", "rotate-size", "rotate-count", "har", "har-body-limit", "per-flow"]

    mutating func readCapture(_ line: ProfileLexer.Line) {
        guard let (key, keyColumn, raw, column) = keyValueLine(line, example: "pcap = /var/log/sluice/tun.pcap") else { return }
        guard Self.captureKeys.contains(key) else {
            error(line.number, keyColumn, "unknown key '\(key)' in [Capture]", hint: Suggestion.hint(for: key, in: Self.captureKeys))
            return
        }
        guard firstTime(key, section: .capture, line: line.number, column: keyColumn) else { return }
        let value = ProfileLexer.unquote(raw)
        let n = line.number
        switch key {
        case "pcap", "har":
            guard !value.isEmpty else {
                error(n, column, "\(key) needs a file path", hint: "a relative path is taken from the profile's folder")
                return
            }
            if key == "pcap" { capture.pcapPath = resolvePath(value) } else { capture.harPath = resolvePath(value) }
        case "per-flow":
            guard !value.isEmpty else {
                error(n, column, "per-flow needs a folder", hint: "a relative path is taken from the profile's folder")
                return
            }
            capture.perFlowDirectory = resolvePath(value)
        case "filter":
            guard !value.isEmpty else { error(n, column, "filter is empty", hint: "write a pcap-filter(7) expression, or remove the line"); return }
            capture.filter = value
        case "snaplen":
            if let v = integer(value, 64 ... 262_144, what: "snaplen", line: n, column: column) { capture.snapLength = v }
        case "rotate-size":
            capture.rotateSize = integer(value, 4096 ... Int(Int64.max), what: "rotate-size", line: n, column: column)
        case "rotate-count":
            if let v = integer(value, 1 ... 1000, what: "rotate-count", line: n, column: column) { capture.rotateCount = v }
        case "har-body-limit":
            if let v = integer(value, 0 ... 1 << 30, what: "har-body-limit", line: n, column: column) { capture.harBodyLimit = v }
        default:
            break
        }
    }
}
