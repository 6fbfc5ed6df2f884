import Testing
import Engine
import Rules
import Sys

/// `sluice check` against real files in a private folder under /tmp.
@Suite(.serialized) struct CheckCommandTests {
    let folder = "/tmp/sluice-check-\(ProcessControl.currentID)"

    func withProfile(_ text: String, _ body: (String) throws -> Void) throws {
        Files.makeDirectory(folder)
        let path = folder + "/p.conf"
        try Files.write(text, to: path)
        defer { Files.remove(path); Files.removeDirectory(folder) }
        try body(path)
    }

    func run(_ arguments: [String]) -> (status: Int32, output: [String], diagnostics: [String]) {
        guard case let .success(options) = CheckCommand.parse(arguments[...]) else { return (2, [], []) }
        var output: [String] = [], diagnostics: [String] = []
        let status = CheckCommand(options: options).run(output: { output.append($0) }, diagnostics: { diagnostics.append($0) })
        return (status, output, diagnostics)
    }

    @Test func goodProfileSummarisesAndWarns() throws {
        try withProfile("[Rule]\nDOMAIN,a.test,REJECT\nFINAL,DIRECT\n[Map Local]\n^http://a\\.test/$ data=missing.json\n") { path in
            let result = run([path])
            #expect(result.status == 0)
            #expect(result.output == ["\(path): ok (1 rule and FINAL, 0 proxies, 0 groups, 0 hosts, 0 URL rewrites, 0 header rewrites, 0 body rewrites, 1 map local, 0 statistics, 1 warning)"])
            // Relative paths in the profile resolve against its own folder.
            #expect(result.diagnostics == ["\(path):5: warning: \(folder)/missing.json is not a file\n  hint: requests for it will get 404 until it exists"])
        }
    }

    /// A rule that can never match is a warning, and the summary counts it
    /// (it said "0 warnings" under the warning); a redundant one is a note.
    @Test func shadowedRulesCountAsWarnings() throws {
        try withProfile("[Rule]\nDOMAIN,a.test,DIRECT\nDOMAIN,a.test,REJECT\nDOMAIN,b.test,DIRECT\nDOMAIN,b.test,DIRECT\nFINAL,DIRECT\n") { path in
            let result = run([path])
            #expect(result.status == 0)
            #expect(result.output.first?.hasSuffix(", 1 warning)") == true, "\(result.output)")
            #expect(result.diagnostics.filter { $0.contains(": warning: ") }.count == 1, "\(result.diagnostics)")
            #expect(result.diagnostics.filter { $0.contains(": note: ") }.count == 1, "\(result.diagnostics)")
        }
    }

    /// URL patterns no index can pass over are named, so that a list's
    /// author can see which lines run on every request.
    @Test func patternsThatRunOnEveryRequestAreNamed() throws {
        let text = """
        [Rule]
        URL-REGEX,"\\.(png|gif)$",REJECT
        URL-REGEX,"^https?://[^/]+/ads/",REJECT
        URL-REGEX,"^http://api\\.test/",DIRECT
        FINAL,DIRECT
        [URL Rewrite]
        ^https?://[a-z]+/ _ reject
        """
        try withProfile(text + "\n") { path in
            let result = run([path])
            #expect(result.status == 0)
            #expect(result.diagnostics == ["\(path): note: 2 URL patterns run on every HTTP request (lines 2, 7): no literal text of three bytes or more outside \"http(s)://\" lets Sluice pass them over; the other URL patterns are indexed"],
                    "\(result.diagnostics)")
        }
        try withProfile("[Rule]\nURL-REGEX,\"^https?://[^/]+/ads/\",REJECT\nFINAL,DIRECT\n") { path in
            #expect(run([path]).diagnostics.isEmpty)
        }
    }

    /// `capture` changes what every packet capture holds: `check` says which lines choose.
    @Test func captureRulesAreNamed() throws {
        try withProfile("[Rule]\nDOMAIN,a.test,DIRECT,capture\nDEST-PORT,53,DIRECT\nPROTOCOL,ICMP,DIRECT,capture\nFINAL,DIRECT\n") { path in
            let result = run([path])
            #expect(result.status == 0)
            #expect(result.diagnostics == ["\(path): note: a packet capture keeps only the flows decided by the rules with the capture option (lines 2, 4); every other flow is left out of it"],
                    "\(result.diagnostics)")
        }
    }

    /// Owner rules cost each new flow a lookup: `check` says what kind.
    @Test func ownerRulesAreNamedWithWhatTheyCost() throws {
        try withProfile("[Rule]\nUID,1000,DIRECT\nAND,((UID,0),(DEST-PORT,22)),REJECT\nFINAL,DIRECT\n") { path in
            #expect(run([path]).diagnostics == ["\(path): note: the rules at lines 2, 3 test who opened a flow: for each new flow, its socket's owner is asked of the kernel (a few µs); a flow whose program or socket is gone by then matches none of them"])
        }
        try withProfile("[Rule]\nDOMAIN,a.test,DIRECT\nPROCESS-NAME,curl,REJECT\nFINAL,DIRECT\n") { path in
            let diagnostics = run([path]).diagnostics
            #expect(diagnostics.count == 1)
            #expect(diagnostics.first?.hasPrefix("\(path): note: the rule at line 3 tests who opened a flow: for each new flow, its socket is asked of the kernel and its program searched for in /proc") == true, "\(diagnostics)")
        }
        try withProfile("[Rule]\nDOMAIN,a.test,DIRECT\nFINAL,DIRECT\n") { path in
            #expect(run([path]).diagnostics.isEmpty)
        }
    }

    @Test func badProfileListsEveryErrorAndFails() throws {
        try withProfile("[Rule]\nDOMAIN-SUFIX,ads.test,REJECT\nFINAL,DIRCT\n") { path in
            let result = run([path])
            #expect(result.status == 1)
            #expect(result.output.isEmpty)
            #expect(result.diagnostics == [
                "\(path):2: error: unknown rule type 'DOMAIN-SUFIX'\n  hint: did you mean DOMAIN-SUFFIX?\n\(path):3: error: unknown policy 'DIRCT' in FINAL\n  hint: did you mean DIRECT?",
                "\(path): 2 errors; the profile was not loaded",
            ])
        }
    }

    @Test func dumpPrintsJSONOnStandardOutput() throws {
        try withProfile("[Rule]\nFINAL,REJECT\n") { path in
            let result = run([path, "--dump", "json"])
            #expect(result.status == 0)
            #expect(result.output.count == 1)
            #expect(result.output[0].hasPrefix("{\n  \"file\": \"\(path)\","))
            #expect(result.output[0].contains("\"final\": {\n    \"line\": 2,\n    \"policy\": \"REJECT\"\n  }"))
        }
    }

    @Test func unreadableAndNonUTF8Files() throws {
        let missing = run([folder + "/none.conf"])
        #expect(missing.status == 1)
        #expect(missing.diagnostics.first == "\(folder)/none.conf: error: cannot read the profile\n  hint: check that the file exists and is readable")
        guard case let .failure(failure) = ProfileLoader.load("/proc/self/exe") else { Issue.record("loaded a binary"); return }
        #expect(failure.errors.map(\.message) == ["the profile is not UTF-8 text"])
    }

    /// Rule and domain sets are read from files beside the profile, counted in
    /// the summary, and a mistake in one is reported at its own file and line.
    @Test func ruleSetsAreReadFromTheProfilesFolder() throws {
        let text = "[Rule]\nRULE-SET,lists/ads.list,REJECT\nDOMAIN-SET,lists/trackers.txt,REJECT\nRULE-SET,LAN,DIRECT\nFINAL,DIRECT\n"
        try withProfile(text) { path in
            Files.makeDirectory(folder + "/lists")
            defer {
                Files.remove(folder + "/lists/ads.list"); Files.remove(folder + "/lists/trackers.txt")
                Files.removeDirectory(folder + "/lists")
            }
            try Files.write("DOMAIN-SUFFIX,ads.test\nIP-CIDR,192.0.2.0/24,no-resolve\nURL-REGEX,\"\\\\.(png|gif)$\"\n", to: folder + "/lists/ads.list")
            try Files.write(".tracker.test\n", to: folder + "/lists/trackers.txt")
            let good = run([path])
            #expect(good.status == 0, "\(good.diagnostics)")
            #expect(good.output.first?.hasPrefix("\(path): ok (3 rules (15 entries from 3 sets) and FINAL, 0 proxies") == true, "\(good.output)")
            // A set's URL pattern without a literal to index is named by its file and line.
            #expect(good.diagnostics == ["\(path): note: 1 URL pattern runs on every HTTP request (line \(folder)/lists/ads.list:3): no literal text of three bytes or more outside \"http(s)://\" lets Sluice pass it over; the other URL patterns are indexed"],
                    "\(good.diagnostics)")
            try Files.write(".tracker.test\nnot a name\n", to: folder + "/lists/trackers.txt")
            let bad = run([path])
            #expect(bad.status == 1)
            #expect(bad.diagnostics == ["\(folder)/lists/trackers.txt:2: error: a domain set holds one name per line, got 'not a name'\n  hint: write one name per line: ads.test for that name, .ads.test for it and every name under it",
                                      "\(path): 1 error; the profile was not loaded"], "\(bad.diagnostics)")
            Files.remove(folder + "/lists/trackers.txt")
            let missing = run([path])
            #expect(missing.diagnostics == ["\(path):3: error: cannot read the domain set \(folder)/lists/trackers.txt: no such file\n  hint: check the path; a relative path starts at the profile's folder, \(folder)",
                                          "\(path): 1 error; the profile was not loaded"], "\(missing.diagnostics)")
        }
    }

    /// A rule an earlier one always beats is named: a warning when its policy
    /// would have differed, a note when it is only redundant; ten, then a count.
    @Test func rulesThatCanNeverMatchAreNamed() throws {
        var text = "[Rule]\nDOMAIN-SUFFIX,test,DIRECT\nDOMAIN,api.test,REJECT\nIP-CIDR,10.0.0.0/8,DIRECT\nIP-CIDR,10.1.0.0/16,DIRECT\n"
        try withProfile(text + "FINAL,DIRECT\n") { path in
            let result = run([path])
            #expect(result.status == 0)
            #expect(result.diagnostics == [
                "\(path):3: warning: DOMAIN,api.test,REJECT can never match: line 2 (DOMAIN-SUFFIX,test,DIRECT) comes first and matches every flow it would\n  hint: move it above line 2, or remove it",
                "\(path):5: note: IP-CIDR,10.1.0.0/16,DIRECT is redundant: line 4 (IP-CIDR,10.0.0.0/8,DIRECT) already decides every flow it would, the same way\n  hint: remove it",
            ], "\(result.diagnostics)")
        }
        for i in 0 ..< 12 { text += "DOMAIN,h\(i).test,REJECT\n" }
        try withProfile(text + "FINAL,DIRECT\n") { path in
            let result = run([path])
            #expect(result.diagnostics.count == 11)
            #expect(result.diagnostics.last == "\(path): note: 4 more rules that an earlier rule always beats", "\(result.diagnostics)")
        }
    }

    @Test func usageErrors() {
        for arguments in [[], ["--dump"], ["a.conf", "--dump", "xml"], ["a.conf", "b.conf"], ["--verbose", "a.conf"]] {
            guard case let .failure(error) = CheckCommand.parse(arguments[...]) else { Issue.record("\(arguments) parsed"); continue }
            #expect(error.description.hasPrefix("sluice check: "))
        }
        #expect((try? CheckCommand.parse(["a.conf", "--dump", "json"]).get()) == CheckCommand.Options(file: "a.conf", dumpJSON: true))
    }
}
