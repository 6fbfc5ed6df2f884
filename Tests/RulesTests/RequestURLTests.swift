import Testing
@testable import Rules

/// `RequestURL` reads ASCII URLs byte by byte and everything else by
/// Character; the two must agree wherever both apply.
@Suite struct RequestURLTests {
    static let cases = [
        "http://API.Test.:8080/v1?x=1", "http://user:pw@[fd00::2]/", "http://a.test?q", "https://a.test:443/",
        "a.test/x", "http://", "://x", "x://", "http://./", "http://host./", "http://host:/", "http://host:+80/",
        "http://host:99999/", "http://host:8o/", "http://[::1]", "http://[::1]:", "http://[::1]:80/x", "http://[::1]x/",
        "http://[::1", "http://[]/", "http://a@b@c/", "http://@/", "http://h#frag", "http://h/p#frag", "HTTP://H/",
        "http://h:1:2/", "ws://h", "a://b://c", "http://h?q/with/slash", "http://h/%41%42", "http:///path",
        "http:/h/", "http:h", "http://h\\x/", "http:// h /", "http://h;p=1/", "http://h:-0/", "http://h:-1/", "http://h:-/",
        "http://h:+/", "http://h:0080/", "http://h:65535/", "http://h:65536/", "http://h:00000000000000000080/", "http://[::1]:+8/",
    ]

    @Test func parts() throws {
        let a = try #require(RequestURL("http://API.Test.:8080/v1?x=1"))
        #expect(a.scheme == "http" && a.host == "api.test" && a.port == 8080 && a.target == "/v1?x=1" && a.hostHeader == "api.test:8080")
        let b = try #require(RequestURL("http://user:pw@[fd00::2]/"))
        #expect(b.host == "fd00::2" && b.port == nil && b.target == "/" && b.hostHeader == "[fd00::2]")
        let c = try #require(RequestURL("http://a.test?q"))
        #expect(c.target == "/?q" && c.hostHeader == "a.test")
        #expect(RequestURL("https://a.test:443/").map(\.hostHeader) == "a.test")
        #expect(RequestURL("a.test/x") == nil)
        #expect(RequestURL("http:///x") == nil)
        #expect(RequestURL("http://[::1]:")  == nil)
        #expect(RequestURL("http://[::1]x/") == nil)
        #expect(RequestURL("http://host:99999/") == nil)
        #expect(RequestURL("http://host:/")?.port == nil)
        #expect(RequestURL("http://./") == nil)
        // Not ASCII: the Character path, which lowercases beyond ASCII.
        #expect(RequestURL("http://ÄB.test/ü")?.host == "äb.test")
    }

    /// One spelling per URL for the patterns: host lowercased without its
    /// trailing dot, no default port, no user part.
    @Test func normalized() {
        for spelling in ["http://KEEP.TEST./a?b", "http://Keep.Test:80/a?b", "HTTP://keep.test./a?b", "http://user@keep.test/a?b"] {
            #expect(RequestURL(spelling)?.normalized == "http://keep.test/a?b", "\(spelling)")
        }
        #expect(RequestURL("https://A.test:443")?.normalized == "https://a.test/")
        #expect(RequestURL("https://a.test:80/x")?.normalized == "https://a.test:80/x")
        #expect(RequestURL("http://[FD00::2]:8080/x")?.normalized == "http://[fd00::2]:8080/x")
    }

    /// HTTP mode parses a request's URL once and keeps the parts for the
    /// normalized URL it matches on: they must be what parsing that URL gives.
    @Test func theNormalizedURLParsesBackToTheSameParts() {
        var urls = Self.cases + ["http://ÄB.test/ü", "http://İ.test:80/", "https://Straße.test:443/é?x", "http://[FD00::2]:80/"]
        var state: UInt64 = 0x5eed_0002
        let alphabet = Array("hH:/?#@[]. 0189+-%aZ").map(String.init)
        for _ in 0 ..< 5_000 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            var url = ["http://", "HTTPS://", "http://[", "http://u@"][Int(state >> 40) % 4]
            for _ in 0 ..< Int(state >> 59) {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                url += alphabet[Int(state >> 33) % alphabet.count]
            }
            urls.append(url)
        }
        var checked = 0
        var differing: [String] = []
        for url in urls {
            guard let parts = RequestURL(url) else { continue }
            checked += 1
            let both = parts.normalizedAndParts
            if both.url != parts.normalized || both.parts != RequestURL(parts.normalized), differing.count < 10 { differing.append(url) }
            // The URL itself, kept when it is spelled so, gives the same.
            let kept = parts.normalizedAndParts(of: url)
            if parts.spellsNormalized(url) != (url == parts.normalized) || kept.url != both.url || kept.parts != both.parts,
               differing.count < 10
            {
                differing.append(url)
            }
        }
        #expect(differing.isEmpty, "\(differing)")
        #expect(checked > 1000, "\(checked) URLs parsed")
        // Ordinary hosts take the parts as they are (the default port dropped), without a second parse.
        for (url, port) in [("http://API.test:80/x", nil), ("https://10.0.0.1:8443/", 8443), ("http://[fd00::2]:80/", nil)] as [(String, UInt16?)] {
            let parts = RequestURL(url)
            #expect(parts?.normalizedAndParts.parts == parts.map { RequestURL(scheme: $0.scheme, host: $0.host, port: port, target: $0.target) }, "\(url)")
        }
    }

    /// HTTP mode keeps a URL already spelled as `normalized` instead of making it again.
    @Test(arguments: cases + ["http://a.test/x", "https://[fd00::2]:8443/", "http://h:8080/p?q", "https://h/", "http://h/p#frag"])
    func spellsNormalizedOnlyWhenItIs(_ url: String) {
        guard let parts = RequestURL(url) else { return }
        #expect(parts.spellsNormalized(url) == (url == parts.normalized), "\(url) against \(parts.normalized)")
        #expect(parts.spellsNormalized(parts.normalized), "\(parts.normalized)")
        #expect(parts.normalizedAndParts(of: url).url == parts.normalized, "\(url)")
    }

    @Test func theUsualSpellingIsKept() throws {
        let url = "http://10.88.0.2:8080/1k"
        let parts = try #require(RequestURL(url))
        #expect(parts.spellsNormalized(url))
        #expect(!parts.spellsNormalized("http://10.88.0.2:8080/1k/"))
        #expect(!parts.spellsNormalized("http://10.88.0.2:8080/1"))
        let defaultPort = try #require(RequestURL("http://a.test:80/"))
        #expect(!defaultPort.spellsNormalized("http://a.test:80/"))
        let upperScheme = try #require(RequestURL("HTTP://a.test/"))
        #expect(!upperScheme.spellsNormalized("HTTP://a.test/"))
    }

    @Test(arguments: cases) func bothPathsAgree(_ url: String) {
        #expect(RequestURL.parse(ascii: url) == RequestURL(characters: url), "\(url)")
    }

    /// Random strings over the characters that matter to the split.
    @Test func bothPathsAgreeOnRandomStrings() {
        let alphabet = Array("hH:/?#@[]. 0189+-%aZ").map(String.init)
        var state: UInt64 = 0x5eed_0001
        var disagreements: [String] = []
        var parsed = 0
        for _ in 0 ..< 20_000 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let length = Int(state >> 59)
            var url = ["http://", "H://", "", "x:/", "://"][Int(state >> 40) % 5]
            for _ in 0 ..< length {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                url += alphabet[Int(state >> 33) % alphabet.count]
            }
            let fast = RequestURL.parse(ascii: url)
            if fast != nil { parsed += 1 }
            if fast != RequestURL(characters: url), disagreements.count < 10 { disagreements.append(url) }
        }
        #expect(disagreements.isEmpty, "\(disagreements)")
        #expect(parsed > 1000, "the strings exercise the parser: \(parsed) parsed")
    }
}
