// fuzz-sources: Sources/Wire Sources/Crypto Sources/HTTP Sources/Rules
// fuzz-corpus: profile
// libFuzzer harness for the profile parser (rule set files included: each is
// the input again): whatever the text, parsing ends with a profile or with at
// least one error; a profile dumps as JSON and its
// rules print back to text that parses to the same conditions; every finding
// prints and points inside the file.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProfile(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let lineCount = text.utf8.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
    // Every RULE-SET and DOMAIN-SET file is the input itself, so set files are fuzzed too.
    let readSet: (String) -> ProfileFile = { _ in .text(text) }
    switch ProfileParser.parse(text, file: "fuzz.conf", baseDirectory: "/fuzz", readFile: readSet) {
    case let .success(profile):
        _ = ProfileJSON.render(profile)
        _ = ProfileJSON.render(profile, pretty: false)
        // Sets (a DOMAIN-SET's table above all) answer names made of the input's lines.
        let names = ["ads.test", "x.ads.test.", "a..b", String(repeating: "a.", count: 130) + "test"]
            + text.split(separator: "\n").prefix(8).map { String($0.prefix(300)) }
        for set in profile.ruleSets {
            for name in names {
                let facts = FlowFacts(transport: .tcp, destinationPort: 443, sourcePort: 1, domain: name, applicationProtocol: .tls)
                let verdict = set.verdict(facts, final: true)
                precondition((set.firstMatch(facts, final: true) != nil) == (verdict == .match), "\(set) \(name)")
            }
        }
        for warning in profile.warnings { check(warning, lineCount: lineCount) }
        precondition(profile.finalRule.line >= 1 && profile.finalRule.line <= lineCount)
        for rule in profile.rules { precondition(rule.line < profile.finalRule.line) }
        // Printed rules parse back to the same conditions (policies replaced by DIRECT,
        // since proxies are not re-declared).
        let echo = "[Rule]\n" + profile.rules.map { "\($0.condition),DIRECT" + ($0.condition.isNoResolve ? ",no-resolve" : "") }
            .joined(separator: "\n") + "\nFINAL,DIRECT\n"
        guard case let .success(again) = ProfileParser.parse(echo, file: "echo.conf", baseDirectory: "/fuzz", readFile: readSet) else {
            preconditionFailure("printed rules do not parse:\n\(echo)")
        }
        precondition(again.rules.map(\.condition) == profile.rules.map(\.condition), "printed rules parse differently:\n\(echo)")
        for proxy in profile.proxies { _ = proxy.description }
        for group in profile.groups { _ = group.description }
        for entry in profile.mapLocals { _ = entry.description }
        for entry in profile.urlRewrites { _ = entry.description }
        for entry in profile.headerRewrites { _ = entry.description }
        for entry in profile.statistics { _ = entry.description }
    case let .failure(failure):
        precondition(!failure.errors.isEmpty, "a failed load with no error")
        for error in failure.errors { check(error, lineCount: lineCount) }
        for warning in failure.warnings { check(warning, lineCount: lineCount) }
        _ = failure.description
    }
    return 0
}

func check(_ finding: ProfileError, lineCount: Int) {
    _ = finding.description
    precondition(finding.line >= 0 && finding.line <= lineCount, "line \(finding.line) outside 0...\(lineCount)")
    precondition(!finding.message.isEmpty)
}
