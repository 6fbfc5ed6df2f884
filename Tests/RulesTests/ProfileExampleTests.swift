import Testing
import Wire
@testable import Rules

/// The example of profile-dialect.md, with its annotations moved onto lines of
/// their own (the dialect has no trailing comments).
let specExample = #"""
[General]
# error | warning | info | debug
loglevel = info
dns-mode = fake-ip
dns-server = 10.0.0.53
fake-ip-range = 198.18.0.0/15
mtu = 1500
routing-mark = 0x2a

[Proxy]
corp-socks = socks5, proxy.test, 1080, username=alice, password="s3cr3t,with a comma", udp-relay=true
corp-http  = http, 10.9.0.2, 3128, username=bob, password=hunter2
deny403    = reject, status-code=403, body="Blocked by policy"
reset      = reject-rst

[Proxy Group]
egress = fallback, corp-socks, corp-http, url=http://health.test/generate_204, interval=60, timeout=5
auto   = url-test, corp-socks, corp-http, url=http://health.test/generate_204, interval=300, tolerance=100
pick   = select, egress, corp-socks, DIRECT

[Rule]
DOMAIN,api.test,DIRECT
DOMAIN-SUFFIX,ads.test,REJECT
DOMAIN-KEYWORD,tracker,reset
DOMAIN-REGEX,"^cdn[0-9]+\.example\.test$",DIRECT
IP-CIDR,10.0.0.0/8,DIRECT,no-resolve
IP-CIDR6,fd00::/8,DIRECT
DEST-PORT,5432,DIRECT
SRC-PORT,>=50000,DIRECT
PROTOCOL,UDP,corp-socks
URL-REGEX,"^http://api\.test/v2/upload",corp-http
METHOD,POST,corp-http
HEADER,"X-Route: ^via-socks$",corp-socks
USER-AGENT,"LegacyApp/*",REJECT-DROP
AND,((METHOD,POST),(DOMAIN,upload.test)),corp-http
NOT,((DOMAIN-SUFFIX,internal.test)),egress
FINAL,DIRECT

[Host]
origin.test = 10.231.1.2
v6.test = fd00::2

[URL Rewrite]
^http://api\.test/(.*) http://api.staging.test/$1 header
^http://old\.test/(.*) http://new.test/$1 307
^http://legacy\.test/(.*) http://new.test/$1 302
^http://ads\.test/ _ reject

[Header Rewrite]
http-request ^http://api\.staging\.test/ header-add X-Env staging
http-request ^http://api\.test/ header-replace User-Agent "sluice-test/1.0"
http-request ^http://([a-z0-9-]+\.)*test/ header-del X-Debug-Token
http-response ^http://api\.staging\.test/ header-replace-regex Set-Cookie "(?i)domain=\.?api\.staging\.test" "Domain=api.test"

[Map Local]
^http://api\.test/v1/config$ data-type=text data="{\"feature\":true}" status-code=200 header="Content-Type:application/json"
^http://api\.test/v1/fail$ data-type=text data="" status-code=503
^http://img\.test/.*\.png$ data-type=file data="mocks/placeholder.png" header="Content-Type:image/png|Cache-Control:no-store"
^http://static\.test/assets/(.*)$ data-type=dir data="cache/static"

[Statistics]
api-v1 = "^http://api\.test/v1/([a-z]+)", key=$1, failure-status=500-599
all-http = ".*", key=host

[Capture]
pcap = /var/log/sluice/tun.pcap
filter = tcp port 80 or udp port 53
snaplen = 262144
rotate-size = 104857600
rotate-count = 10
har = /var/log/sluice/flows.har
har-body-limit = 1048576
"""#

func loadProfile(_ text: String) -> Result<Profile, ProfileErrors> {
    ProfileParser.parse(text, file: "sluice.conf", baseDirectory: "/etc/sluice")
}

func compiledRegex(_ source: String) throws -> CompiledRegex { try CompiledRegex(source) }

@Suite struct ProfileExampleTests {
    @Test func perFlowCaptureFolderIsTakenFromTheProfilesFolder() throws {
        let profile = try loadProfile(withFinal("[Capture]\nper-flow = flows\n")).get()
        #expect(profile.capture.perFlowDirectory == "/etc/sluice/flows")
        #expect(profile.capture.pcapPath == nil)
        let absolute = try loadProfile(withFinal("[Capture]\nper-flow = /var/tmp/f\npcap = all.pcap\n")).get()
        #expect(absolute.capture.perFlowDirectory == "/var/tmp/f")
        #expect(absolute.capture.pcapPath == "/etc/sluice/all.pcap")
    }

    @Test func specExampleParsesToTheExpectedModel() throws {
        let profile = try loadProfile(specExample).get()

        #expect(profile.general == GeneralSettings(
            logLevel: .info, dnsMode: .fakeIP, dnsServers: [.v4(IPv4Address(10, 0, 0, 53))],
            fakeIPRange: try #require(IPv4Prefix("198.18.0.0/15")), mtu: 1500, routingMark: 0x2a))

        #expect(profile.proxies == [
            ProxyDefinition(name: "corp-socks", kind: .socks5(ProxyServer(
                host: "proxy.test", port: 1080, username: "alice", password: "s3cr3t,with a comma", udpRelay: true)), line: 11),
            ProxyDefinition(name: "corp-http", kind: .http(ProxyServer(
                host: "10.9.0.2", port: 3128, username: "bob", password: "hunter2")), line: 12),
            ProxyDefinition(name: "deny403", kind: .reject(status: 403, body: "Blocked by policy"), line: 13),
            ProxyDefinition(name: "reset", kind: .rejectRST, line: 14),
        ])

        #expect(profile.groups == [
            ProxyGroupDefinition(name: "egress", kind: .fallback, members: ["corp-socks", "corp-http"],
                                 url: "http://health.test/generate_204", interval: 60, timeout: 5, line: 17),
            ProxyGroupDefinition(name: "auto", kind: .urlTest, members: ["corp-socks", "corp-http"],
                                 url: "http://health.test/generate_204", interval: 300, tolerance: 100, line: 18),
            ProxyGroupDefinition(name: "pick", kind: .select, members: ["egress", "corp-socks", "DIRECT"], line: 19),
        ])

        let expectedRules: [RuleDefinition] = [
            RuleDefinition(line: 22, condition: .domain("api.test"), policy: "DIRECT"),
            RuleDefinition(line: 23, condition: .domainSuffix("ads.test"), policy: "REJECT"),
            RuleDefinition(line: 24, condition: .domainKeyword("tracker"), policy: "reset"),
            RuleDefinition(line: 25, condition: .domainRegex(try compiledRegex(#"^cdn[0-9]+\.example\.test$"#)), policy: "DIRECT"),
            RuleDefinition(line: 26, condition: .ipCIDR(try #require(IPv4Prefix("10.0.0.0/8")), noResolve: true), policy: "DIRECT"),
            RuleDefinition(line: 27, condition: .ipCIDR6(try #require(IPv6Prefix("fd00::/8")), noResolve: false), policy: "DIRECT"),
            RuleDefinition(line: 28, condition: .destinationPort(PortRange(5432)), policy: "DIRECT"),
            RuleDefinition(line: 29, condition: .sourcePort(PortRange(50000, 65535)), policy: "DIRECT"),
            RuleDefinition(line: 30, condition: .protocol(.udp), policy: "corp-socks"),
            RuleDefinition(line: 31, condition: .urlRegex(try compiledRegex(#"^http://api\.test/v2/upload"#)), policy: "corp-http"),
            RuleDefinition(line: 32, condition: .method("POST"), policy: "corp-http"),
            RuleDefinition(line: 33, condition: .header(name: "X-Route", value: try compiledRegex("^via-socks$")), policy: "corp-socks"),
            RuleDefinition(line: 34, condition: .userAgent(GlobPattern("LegacyApp/*")), policy: "REJECT-DROP"),
            RuleDefinition(line: 35, condition: .and([.method("POST"), .domain("upload.test")]), policy: "corp-http"),
            RuleDefinition(line: 36, condition: .not(.domainSuffix("internal.test")), policy: "egress"),
        ]
        #expect(profile.rules.count == expectedRules.count)
        for (got, expected) in zip(profile.rules, expectedRules) { #expect(got == expected) }
        #expect(profile.finalRule == FinalRule(policy: "DIRECT", line: 37))

        #expect(profile.hosts == [
            HostEntry(name: "origin.test", address: .v4(IPv4Address(10, 231, 1, 2)), line: 40),
            HostEntry(name: "v6.test", address: .v6(try #require(IPv6Address("fd00::2"))), line: 41),
        ])

        #expect(profile.urlRewrites == [
            URLRewrite(regex: try compiledRegex(#"^http://api\.test/(.*)"#), replacement: "http://api.staging.test/$1", mode: .header, line: 44),
            URLRewrite(regex: try compiledRegex(#"^http://old\.test/(.*)"#), replacement: "http://new.test/$1", mode: .temporaryRedirect, line: 45),
            URLRewrite(regex: try compiledRegex(#"^http://legacy\.test/(.*)"#), replacement: "http://new.test/$1", mode: .found, line: 46),
            URLRewrite(regex: try compiledRegex(#"^http://ads\.test/"#), replacement: "_", mode: .reject, line: 47),
        ])

        #expect(profile.headerRewrites == [
            HeaderRewrite(direction: .request, regex: try compiledRegex(#"^http://api\.staging\.test/"#),
                          operation: .add(name: "X-Env", value: "staging"), line: 50),
            HeaderRewrite(direction: .request, regex: try compiledRegex(#"^http://api\.test/"#),
                          operation: .replace(name: "User-Agent", value: "sluice-test/1.0"), line: 51),
            HeaderRewrite(direction: .request, regex: try compiledRegex(#"^http://([a-z0-9-]+\.)*test/"#),
                          operation: .delete(name: "X-Debug-Token"), line: 52),
            HeaderRewrite(direction: .response, regex: try compiledRegex(#"^http://api\.staging\.test/"#),
                          operation: .replaceRegex(name: "Set-Cookie", pattern: try compiledRegex(#"(?i)domain=\.?api\.staging\.test"#),
                                                   replacement: "Domain=api.test"), line: 53),
        ])

        #expect(profile.mapLocals == [
            MapLocal(regex: try compiledRegex(#"^http://api\.test/v1/config$"#), data: .text(#"{"feature":true}"#), statusCode: 200,
                     headers: [HeaderField(name: "Content-Type", value: "application/json")], line: 56),
            MapLocal(regex: try compiledRegex(#"^http://api\.test/v1/fail$"#), data: .text(""), statusCode: 503, line: 57),
            MapLocal(regex: try compiledRegex(#"^http://img\.test/.*\.png$"#), data: .file("/etc/sluice/mocks/placeholder.png"), statusCode: 200,
                     headers: [HeaderField(name: "Content-Type", value: "image/png"), HeaderField(name: "Cache-Control", value: "no-store")], line: 58),
            MapLocal(regex: try compiledRegex(#"^http://static\.test/assets/(.*)$"#), data: .directory("/etc/sluice/cache/static"), line: 59),
        ])

        #expect(profile.statistics == [
            StatisticsDefinition(name: "api-v1", regex: try compiledRegex(#"^http://api\.test/v1/([a-z]+)"#), key: .capture(1), failureStatus: 500 ... 599, line: 62),
            StatisticsDefinition(name: "all-http", regex: try compiledRegex(".*"), key: .host, line: 63),
        ])

        #expect(profile.capture == CaptureSettings(
            pcapPath: "/var/log/sluice/tun.pcap", filter: "tcp port 80 or udp port 53", snapLength: 262_144,
            rotateSize: 104_857_600, rotateCount: 10, harPath: "/var/log/sluice/flows.har", harBodyLimit: 1_048_576))

        // The one 302 gets its warning; nothing else is suspicious.
        #expect(profile.warnings.map(\.description) == [
            "sluice.conf:46: warning: 302 makes clients repeat a POST, PUT or DELETE as a GET without its body\n  hint: this rewrite matches requests of any method; use 307 to keep the method and body",
        ])
    }

    @Test func policiesResolve() throws {
        let profile = try loadProfile(specExample).get()
        #expect(profile.policy(named: "DIRECT") == .builtin(.direct))
        #expect(profile.policy(named: "REJECT-NO-DROP") == .builtin(.rejectNoDrop))
        #expect(profile.policy(named: "reset")?.name == "reset")
        guard case let .group(group)? = profile.policy(named: "pick") else { Issue.record("pick is not a group"); return }
        #expect(group.kind == .select)
        #expect(profile.policy(named: "nothing") == nil)
        #expect(profile.hostAddress(for: "v6.test") == IPAddress("fd00::2"))
    }

    @Test func ruleDescriptionsReadLikeTheProfile() throws {
        let profile = try loadProfile(specExample).get()
        #expect(profile.rules.map(\.description) == [
            "DOMAIN,api.test,DIRECT",
            "DOMAIN-SUFFIX,ads.test,REJECT",
            "DOMAIN-KEYWORD,tracker,reset",
            #"DOMAIN-REGEX,"^cdn[0-9]+\\.example\\.test$",DIRECT"#,
            "IP-CIDR,10.0.0.0/8,DIRECT,no-resolve",
            "IP-CIDR6,fd00::/8,DIRECT",
            "DEST-PORT,5432,DIRECT",
            "SRC-PORT,50000-65535,DIRECT",
            "PROTOCOL,UDP,corp-socks",
            #"URL-REGEX,"^http://api\\.test/v2/upload",corp-http"#,
            "METHOD,POST,corp-http",
            #"HEADER,"X-Route: ^via-socks$",corp-socks"#,
            #"USER-AGENT,"LegacyApp/*",REJECT-DROP"#,
            "AND,((METHOD,POST),(DOMAIN,upload.test)),corp-http",
            "NOT,((DOMAIN-SUFFIX,internal.test)),egress",
        ])
        // Each description parses back to the same rule.
        let text = "[Proxy]\nreset = reject-rst\ncorp-socks = socks5, p.test, 1\ncorp-http = http, p.test, 2\negress = direct\n[Rule]\n"
            + profile.rules.map(\.description).joined(separator: "\n") + "\nFINAL,DIRECT\n"
        let again = try loadProfile(text).get()
        #expect(again.rules.map(\.condition) == profile.rules.map(\.condition))
        #expect(profile.rules.filter(\.condition.requiresHTTP).map(\.line) == [31, 32, 33, 34, 35])
    }

    /// The spec's example as printed, with annotations after values, is not a
    /// valid profile: trailing comments do not exist, and the errors say so.
    @Test func trailingCommentsAreNotComments() {
        let text = "[Rule]                               # TYPE,VALUE,POLICY\nFINAL,DIRECT\n"
        guard case let .failure(failure) = loadProfile(text) else { Issue.record("loaded"); return }
        #expect(failure.errors.map(\.description) == [
            "sluice.conf:1: error: text after the section header [Rule]\n  hint: comments go on their own line, starting with #, ; or //",
        ])
    }
}
