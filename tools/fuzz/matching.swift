// fuzz-sources: Sources/Wire Sources/Crypto Sources/HTTP Sources/Rules
// fuzz-corpus: matching
// libFuzzer harness for the matching side of Rules, over text that comes from
// requests: the input is split at NUL-free "\n" into a Map Local name, a URL, a
// host and a glob/template. Checks: LocalPath never yields a path outside its
// folder; RequestURL either refuses or gives a lowercased, non-empty host,
// reads an ASCII URL as its Character parser does, and gives the parts of its
// normalized URL as parsing that URL does; the
// domain index agrees with the plain suffix test, and the rewriters' prefix
// trie with comparing each prefix; the byte matcher, globs, templates and the
// engine finish on anything.

let folder = "/srv/fuzz"
let names = ["a.test", "ads.test", "x.y.test", "test", "Example.TEST", "b.a.test"]
// Built per input rather than held in globals: LeakSanitizer reports a lazy
// global's boxes as leaked at exit.
func makeIndex() -> DomainSuffixIndex<Int> {
    var index = DomainSuffixIndex<Int>()
    for (i, name) in names.enumerated() { index.insert(name, kind: i % 2 == 0 ? .suffix : .exact, index: i, value: i) }
    return index
}

func makeEngine() -> RuleEngine { RuleEngine(rules: [
    RuleDefinition(line: 1, condition: .domainSuffix("ads.test"), policy: "REJECT"),
    RuleDefinition(line: 2, condition: .and([.method("POST"), .domainKeyword("up")]), policy: "p"),
    RuleDefinition(line: 3, condition: .userAgent(GlobPattern("*Legacy?App*")), policy: "q"),
    RuleDefinition(line: 4, condition: .ipCIDR(IPv4Prefix("10.0.0.0/8")!, noResolve: true), policy: "DIRECT"),
], final: FinalRule(policy: "DIRECT", line: 5)) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMatching(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size <= 4096 else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let parts = text.split(separator: "\n", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
    let part = { (i: Int) -> String in i < parts.count ? parts[i] : "" }

    // Checked as bytes, as the file system sees them: as Characters, "/" and a
    // following combining mark are one grapheme, and String comparisons would
    // see a different path than open(2) does.
    if let path = LocalPath.resolve(directory: folder, relative: part(0)) {
        let bytes = Array(path.utf8), prefix = Array((folder + "/").utf8)
        precondition(bytes.starts(with: prefix), "escaped: \(path)")
        for segment in bytes[prefix.count...].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            precondition(!segment.isEmpty && !segment.elementsEqual([0x2e]) && !segment.elementsEqual([0x2e, 0x2e]), "bad segment in \(path)")
        }
        precondition(!bytes.contains(0) && !bytes.contains(UInt8(ascii: "\\")))
    }

    if let url = RequestURL(part(1)) {
        precondition(!url.host.isEmpty && url.host == url.host.lowercased())
        _ = url.hostHeader
        // HTTP mode takes the normalized URL's parts from the first parse
        // where it can: they must be what parsing the normalized URL gives.
        let both = url.normalizedAndParts
        precondition(both.url == url.normalized && both.parts == RequestURL(url.normalized), "normalizedAndParts disagrees on \(part(1))")
        // Kept as it came when it is spelled so: the same string and parts.
        precondition(url.spellsNormalized(part(1)) == (part(1) == url.normalized), "spellsNormalized is wrong on \(part(1))")
        let kept = url.normalizedAndParts(of: part(1))
        precondition(kept.url == both.url && kept.parts == both.parts, "normalizedAndParts(of:) disagrees on \(part(1))")
    }
    // ASCII URLs are read by bytes; the Character parser must agree.
    if part(1).utf8.allSatisfy({ $0 < 0x80 }) {
        precondition(RequestURL.parse(ascii: part(1)) == RequestURL(characters: part(1)), "RequestURL paths disagree on \(part(1))")
    }
    // An address is four dotted decimals of at most 255, or has a colon.
    if let v4 = IPv4Address(part(2)) { precondition(v4.description.split(separator: ".").count == 4) }

    let host = part(2)
    let expected = names.indices.first { i in
        i % 2 == 0 ? DomainSuffixIndex<Int>.hasSuffix(host, names[i]) : DomainSuffixIndex<Int>.equalNames(host, names[i])
    }
    // The index refuses names with empty labels, and so never finds them.
    let labelsOK = !host.split(separator: ".", omittingEmptySubsequences: false).dropLast(host.hasSuffix(".") ? 1 : 0).contains("")
    if labelsOK { precondition(makeIndex().lookup(host)?.index == expected, "index disagrees on \(host)") }

    let glob = part(3)
    if glob.utf8.count <= 256, host.utf8.count <= 256 { _ = GlobPattern(glob).matches(host) }
    _ = URLTemplate(glob).expand(groups: [Substring(host), nil, Substring(part(1))])

    let facts = FlowFacts(transport: .tcp, destination: IPAddress(part(0)), destinationPort: 80, sourcePort: 1,
                          domain: host.isEmpty ? nil : host, applicationProtocol: size % 2 == 0 ? .http : nil,
                          request: size % 3 == 0 ? RequestFacts(method: part(0), url: part(1),
                                                                headers: HTTPHeaders([HTTPHeader(name: "User-Agent", value: glob)])) : nil)
    // The rewriters' prefix trie names exactly the lines a one-by-one prefix
    // comparison leaves: prefixes from the fourth part (ASCII, split at spaces).
    let prefixes = glob.split(separator: " ", maxSplits: 16).map { Array($0.utf8.filter { $0 < 0x80 }) }
    let candidates = LiteralPrefixIndex(prefixes: prefixes).candidates(for: part(1))
    let oneByOne = prefixes.indices.filter { prefixes[$0].isEmpty || !CompiledRegex.cannotStart(part(1), with: prefixes[$0]) }
    precondition(candidates == oneByOne, "prefix index disagrees on \(part(1))")

    // The byte matcher takes any pattern and text without trapping; each
    // answer is linear in the text (Regex is not compared here: some
    // patterns take it exponential time).
    // The search with groups agrees with the yes or no, and every group it
    // reports lies inside the text, start before end.
    if let matcher = ByteMatcher(glob) {
        let text = part(1)
        let answer = matcher.matches(text)
        let search = Array(text.utf8).withUnsafeBufferPointer { matcher.firstMatch(bytes: $0) }
        switch search {
        case let .match(slots):
            precondition(answer == true && slots.count == matcher.slotCount, "search found what matches denied")
            for group in stride(from: 0, to: slots.count, by: 2) where slots[group] >= 0 {
                precondition(slots[group] <= slots[group + 1] && slots[group + 1] <= text.utf8.count, "group outside the text")
            }
        case .noMatch: precondition(answer == false, "search missed what matches found")
        case .notForBytes: precondition(answer == nil, "search and matches disagree on the text")
        }
        // The URL-REGEX index's promise: a text the pattern matches holds its required literal.
        if answer == true, let literal = ByteMatcher.requiredLiteral(glob, minimumLength: 1) {
            let lowered = Array(text.utf8).map(LiteralAutomaton.lower)
            let holds = lowered.count >= literal.count
                && (0 ... lowered.count - literal.count).contains { Array(lowered[$0 ..< $0 + literal.count]) == literal }
            precondition(holds, "a match without the required literal")
            var index = LiteralAutomaton()
            index.insert(literal, owner: 0)
            index.build()
            precondition(index.candidates(in: text) == [0], "the index missed a literal the text holds")
        }
    }

    let engine = makeEngine()
    for final in [false, true] {
        let outcome = engine.evaluate(facts, final: final)
        if final, case .needsApplicationData = outcome { preconditionFailure("final evaluation did not decide") }
    }
    return 0
}
