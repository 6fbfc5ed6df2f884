import Testing
import Wire
@testable import Rules

@Suite struct ProfileJSONTests {
    /// `capture` (ext) is an option of any rule line: the decision carries it,
    /// the rule prints with it, `check --dump json` shows it.
    @Test func theCaptureOptionIsKeptAndReported() throws {
        let profile = try loadProfile("[Rule]\nDOMAIN-SUFFIX,api.test,DIRECT,capture\nIP-CIDR,10.0.0.0/8,DIRECT,no-resolve,capture\nDEST-PORT,53,DIRECT\nFINAL,DIRECT").get()
        #expect(profile.selectsCapturedFlows)
        #expect(profile.rules.map(\.description) == ["DOMAIN-SUFFIX,api.test,DIRECT,capture",
                                                    "IP-CIDR,10.0.0.0/8,DIRECT,no-resolve,capture", "DEST-PORT,53,DIRECT"])
        let engine = RuleEngine(rules: profile.rules, final: profile.finalRule)
        func decision(domain: String?, to address: String, port: UInt16) -> RuleDecision? {
            let facts = FlowFacts(transport: .udp, destination: IPAddress(address), destinationPort: port, sourcePort: 40000, domain: domain)
            if case let .matched(d) = engine.evaluate(facts, final: true) { return d }
            return nil
        }
        #expect(decision(domain: "x.api.test", to: "192.0.2.1", port: 443)?.capture == true)
        #expect(decision(domain: nil, to: "10.1.2.3", port: 443)?.capture == true)
        #expect(decision(domain: nil, to: "192.0.2.1", port: 53)?.capture == false)
        #expect(decision(domain: nil, to: "192.0.2.1", port: 80)?.capture == false)   // FINAL
        let json = ProfileJSON.render(profile, pretty: false)
        #expect(json.contains(#"{"line":2,"condition":{"type":"DOMAIN-SUFFIX","value":"api.test"},"policy":"DIRECT","capture":true,"requires-http":false}"#))
        #expect(try !loadProfile("[Rule]\nDEST-PORT,53,DIRECT\nFINAL,DIRECT").get().selectsCapturedFlows)
    }

    @Test func smallProfileDumpsExactly() throws {
        let text = #"""
        [Proxy]
        s = socks5, proxy.test, 1080, username=u, password=secret
        [Proxy Group]
        g = fallback, s, DIRECT, url=http://h.test/204
        [Rule]
        AND,((DEST-PORT,80),(HEADER,"X-A: ^b\"c$")),g
        FINAL,DIRECT
        [Map Local]
        ^http://a\.test/$ data-type=base64 data=aGk= header="X-Mock:1"
        """#
        let json = ProfileJSON.render(try loadProfile(text).get(), pretty: false)
        #expect(json == #"""
        {"file":"sluice.conf","general":{"loglevel":"info","dns-mode":"fake-ip","dns-server":[],"fake-ip-range":"198.18.0.0/15","mtu":null,"routing-mark":null,"geoip-database":null,"asn-database":null,"body-rewrite-limit":4194304},\#
        "proxies":[{"line":2,"name":"s","kind":"socks5","server":"proxy.test","port":1080,"username":"u","password-set":true,"udp-relay":false}],\#
        "proxy-groups":[{"line":4,"name":"g","kind":"fallback","members":["s","DIRECT"],"url":"http://h.test/204","interval":600,"timeout":5}],\#
        "rules":[{"line":6,"condition":{"type":"AND","conditions":[{"type":"DEST-PORT","from":80,"to":80},{"type":"HEADER","name":"X-A","regex":"^b\"c$"}]},"policy":"g","requires-http":true}],\#
        "final":{"line":7,"policy":"DIRECT"},"hosts":[],"url-rewrites":[],"header-rewrites":[],"body-rewrites":[],\#
        "map-local":[{"line":9,"regex":"^http://a\\.test/$","data-type":"base64","size":2,"status-code":200,"headers":[{"name":"X-Mock","value":"1"}]}],\#
        "statistics":[],"capture":{"pcap":null,"per-flow":null,"filter":null,"snaplen":262144,"rotate-size":null,"rotate-count":10,"har":null,"har-body-limit":1048576},\#
        "mitm":{"line":null,"hostname":[],"skip-server-cert-verify":false,"auto-quic-block":true,"h2":false},"warnings":[]}
        """#)
        #expect(!json.contains("secret"))
    }

    @Test func bodyRewritesDumpTheirPairs() throws {
        let profile = try loadProfile("[Body Rewrite]\nhttp-response ^http://a\\.test/ \"^(x)$\" \"$1y\" b \"\"\n[Rule]\nFINAL,DIRECT\n").get()
        let json = ProfileJSON.render(profile, pretty: false)
        #expect(json.contains(#""body-rewrites":[{"line":2,"direction":"http-response","regex":"^http://a\\.test/","replacements":[{"pattern":"^(x)$","replacement":"$1y"},{"pattern":"b","replacement":""}]}]"#), "\(json)")
    }

    @Test func specExampleDumpsEverySection() throws {
        let json = ProfileJSON.render(try loadProfile(specExample).get())
        for key in ["general", "proxies", "proxy-groups", "rules", "final", "hosts", "url-rewrites", "header-rewrites",
                    "map-local", "statistics", "capture", "mitm", "warnings"] {
            #expect(json.contains("\"\(key)\": "), "\(key)")
        }
        #expect(!json.contains("hunter2"))
        #expect(json.contains(#""regex": "^cdn[0-9]+\\.example\\.test$""#))
    }
}
