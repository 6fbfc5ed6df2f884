import HTTP

/// `sluice check FILE --dump json`: the loaded model as JSON, so scripts and
/// tests can see exactly what Sluice understood. Keys spell the profile's own
/// words; passwords are never printed (only whether one is set).
public enum ProfileJSON {
    public static func render(_ profile: Profile, pretty: Bool = true) -> String {
        var json = JSONWriter(pretty: pretty)
        json.beginObject()
        json.field("file", profile.file)
        json.key("general"); general(profile.general, &json)
        json.key("proxies"); json.beginArray()
        for proxy in profile.proxies { self.proxy(proxy, &json) }
        json.endArray()
        json.key("proxy-groups"); json.beginArray()
        for group in profile.groups { self.group(group, &json) }
        json.endArray()
        json.key("rules"); json.beginArray()
        for rule in profile.rules {
            json.beginObject()
            json.field("line", rule.line)
            json.key("condition"); condition(rule.condition, &json)
            json.field("policy", rule.policy)
            if rule.options.extendedMatching { json.field("extended-matching", true) }
            if rule.options.capture { json.field("capture", true) }
            json.field("requires-http", rule.condition.requiresHTTP)
            json.endObject()
        }
        json.endArray()
        json.key("final"); json.beginObject()
        json.field("line", profile.finalRule.line)
        json.field("policy", profile.finalRule.policy)
        json.endObject()
        json.key("hosts"); json.beginArray()
        for host in profile.hosts {
            json.beginObject()
            json.field("line", host.line); json.field("name", host.name)
            switch host.value {
            case let .addresses(list):
                // "address" as before for the first; "addresses" for all of them.
                json.field("address", list[0].description)
                json.key("addresses"); json.beginArray()
                for address in list { json.string(address.description) }
                json.endArray()
            case let .alias(target): json.field("alias", target)
            case let .server(server): json.field("server", server.description)
            }
            json.endObject()
        }
        json.endArray()
        json.key("url-rewrites"); json.beginArray()
        for rewrite in profile.urlRewrites {
            json.beginObject()
            json.field("line", rewrite.line); json.field("regex", rewrite.regex.source)
            json.field("replacement", rewrite.replacement); json.field("mode", rewrite.mode.rawValue)
            json.endObject()
        }
        json.endArray()
        json.key("header-rewrites"); json.beginArray()
        for rewrite in profile.headerRewrites { headerRewrite(rewrite, &json) }
        json.endArray()
        json.key("body-rewrites"); json.beginArray()
        for rewrite in profile.bodyRewrites {
            json.beginObject()
            json.field("line", rewrite.line); json.field("direction", rewrite.direction.rawValue)
            json.field("regex", rewrite.regex.source)
            json.key("replacements"); json.beginArray()
            for pair in rewrite.replacements {
                json.beginObject(); json.field("pattern", pair.source); json.field("replacement", pair.replacement); json.endObject()
            }
            json.endArray()
            json.endObject()
        }
        json.endArray()
        json.key("map-local"); json.beginArray()
        for entry in profile.mapLocals { mapLocal(entry, &json) }
        json.endArray()
        json.key("statistics"); json.beginArray()
        for entry in profile.statistics {
            json.beginObject()
            json.field("line", entry.line); json.field("name", entry.name); json.field("regex", entry.regex.source)
            json.field("key", entry.key.description)
            json.key("failure-status"); json.beginObject()
            json.field("from", entry.failureStatus.lowerBound); json.field("to", entry.failureStatus.upperBound)
            json.endObject()
            json.endObject()
        }
        json.endArray()
        json.key("capture"); capture(profile.capture, &json)
        json.key("mitm"); mitm(profile.mitm, &json)
        json.key("warnings"); json.beginArray()
        for warning in profile.warnings {
            json.beginObject()
            json.field("line", warning.line); json.field("message", warning.message); json.field("hint", warning.hint)
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return json.text
    }

    static func general(_ general: GeneralSettings, _ json: inout JSONWriter) {
        json.beginObject()
        json.field("loglevel", general.logLevel.rawValue)
        json.field("dns-mode", general.dnsMode.rawValue)
        json.key("dns-server"); json.beginArray()
        for server in general.dnsServers { json.string(server.description) }
        json.endArray()
        json.field("fake-ip-range", general.fakeIPRange.description)
        json.field("mtu", general.mtu)
        json.field("routing-mark", general.routingMark.map(Int.init))
        json.field("geoip-database", general.geoIPDatabase)
        json.field("asn-database", general.asnDatabase)
        json.field("body-rewrite-limit", general.bodyRewriteLimit)
        json.endObject()
    }

    static func proxy(_ proxy: ProxyDefinition, _ json: inout JSONWriter) {
        json.beginObject()
        json.field("line", proxy.line)
        json.field("name", proxy.name)
        json.field("kind", proxy.kind.name)
        if let server = proxy.server {
            json.field("server", server.host)
            json.field("port", Int(server.port))
            json.field("username", server.username)
            json.field("password-set", server.password != nil)
            if case .socks5 = proxy.kind { json.field("udp-relay", server.udpRelay) }
        }
        if case let .reject(status, body) = proxy.kind {
            json.field("status-code", status)
            json.field("body", body)
        }
        json.endObject()
    }

    static func group(_ group: ProxyGroupDefinition, _ json: inout JSONWriter) {
        json.beginObject()
        json.field("line", group.line)
        json.field("name", group.name)
        json.field("kind", group.kind.rawValue)
        json.key("members"); json.beginArray()
        for member in group.members { json.string(member) }
        json.endArray()
        if group.kind != .select {
            json.field("url", group.url)
            json.field("interval", group.interval)
            json.field("timeout", group.timeout)
        }
        if group.kind == .urlTest { json.field("tolerance", group.tolerance) }
        json.endObject()
    }

    static func condition(_ condition: RuleCondition, _ json: inout JSONWriter) {
        json.beginObject()
        json.field("type", condition.typeName)
        switch condition {
        case let .domain(name), let .domainSuffix(name), let .domainKeyword(name):
            json.field("value", name)
        case let .domainRegex(regex), let .urlRegex(regex):
            json.field("regex", regex.source)
        case let .domainWildcard(pattern, _):
            json.field("value", pattern)
        case let .ipCIDR(prefix, noResolve):
            json.field("value", prefix.description); json.field("no-resolve", noResolve)
        case let .ipCIDR6(prefix, noResolve):
            json.field("value", prefix.description); json.field("no-resolve", noResolve)
        case let .geoIP(country, _, noResolve):
            json.field("value", country); json.field("no-resolve", noResolve)
        case let .ipASN(number, _, noResolve):
            json.field("value", Int(number)); json.field("no-resolve", noResolve)
        case let .destinationPort(range), let .sourcePort(range):
            json.field("from", Int(range.lower)); json.field("to", Int(range.upper))
        case let .sourceIP(prefix):
            json.field("value", prefix.description)
        case let .protocol(value):
            json.field("value", value.rawValue)
        case let .method(method):
            json.field("value", method)
        case let .header(name, value):
            json.field("name", name); json.field("regex", value.source)
        case let .userAgent(glob):
            json.field("glob", glob.pattern)
        case let .owner(.processName(glob)), let .owner(.processPath(glob)):
            json.field("glob", glob.pattern)
        case let .owner(.userID(range)):
            json.field("from", Int(range.lowerBound)); json.field("to", Int(range.upperBound))
        case let .and(conditions), let .or(conditions):
            json.key("conditions"); json.beginArray()
            for sub in conditions { self.condition(sub, &json) }
            json.endArray()
        case let .not(sub):
            json.key("condition"); self.condition(sub, &json)
        case let .ruleSet(set, noResolve):
            // The entries are not listed: a set may hold a hundred thousand.
            json.field("value", set.name)
            json.field("path", set.path)
            json.field("entries", set.count)
            if set.kind == .rules { json.field("no-resolve", noResolve) }
        }
        json.endObject()
    }

    static func headerRewrite(_ rewrite: HeaderRewrite, _ json: inout JSONWriter) {
        json.beginObject()
        json.field("line", rewrite.line)
        json.field("direction", rewrite.direction.rawValue)
        json.field("regex", rewrite.regex.source)
        json.field("operation", rewrite.operation.keyword)
        json.field("name", rewrite.operation.name)
        switch rewrite.operation {
        case let .add(_, value), let .replace(_, value):
            json.field("value", value)
        case .delete:
            break
        case let .replaceRegex(_, pattern, replacement):
            json.field("pattern", pattern.source); json.field("replacement", replacement)
        }
        json.endObject()
    }

    static func mapLocal(_ entry: MapLocal, _ json: inout JSONWriter) {
        json.beginObject()
        json.field("line", entry.line)
        json.field("regex", entry.regex.source)
        json.field("data-type", entry.data.dataType.rawValue)
        switch entry.data {
        case let .text(text): json.field("data", text)
        case let .base64(bytes): json.field("size", bytes.count)
        case let .file(path), let .directory(path): json.field("path", path)
        case .tinyGIF: break
        }
        json.field("status-code", entry.statusCode)
        json.key("headers"); json.beginArray()
        for header in entry.headers {
            json.beginObject(); json.field("name", header.name); json.field("value", header.value); json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    static func mitm(_ mitm: MITMSettings, _ json: inout JSONWriter) {
        json.beginObject()
        json.field("line", mitm.line)
        json.key("hostname"); json.beginArray()
        for pattern in mitm.hostnames {
            json.beginObject()
            json.field("host", pattern.host)
            // null: every port (written :0).
            json.field("port", pattern.port.map(Int.init))
            json.field("exclude", pattern.excludes)
            json.endObject()
        }
        json.endArray()
        json.field("skip-server-cert-verify", mitm.skipServerCertificateVerification)
        json.field("auto-quic-block", mitm.blocksQUIC)
        json.field("h2", mitm.prefersHTTP2)
        json.endObject()
    }

    static func capture(_ capture: CaptureSettings, _ json: inout JSONWriter) {
        json.beginObject()
        json.field("pcap", capture.pcapPath)
        json.field("per-flow", capture.perFlowDirectory)
        json.field("filter", capture.filter)
        json.field("snaplen", capture.snapLength)
        json.field("rotate-size", capture.rotateSize)
        json.field("rotate-count", capture.rotateCount)
        json.field("har", capture.harPath)
        json.field("har-body-limit", capture.harBodyLimit)
        json.endObject()
    }
}
