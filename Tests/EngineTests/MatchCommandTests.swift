import Foundation
import Testing
import Engine

@Suite struct MatchCommandTests {
    @Test func parsesOptions() throws {
        let options = try MatchCommand.parse(["p.conf", "http://a.test/x", "--method", "post", "-H", "X-Route:  via-socks ",
                                             "--header", "Accept: */*"]).get()
        var want = MatchCommand.Options(file: "p.conf", url: "http://a.test/x")
        want.method = "POST"
        want.headers = [("X-Route", "via-socks"), ("Accept", "*/*")]
        #expect(options == want)
    }

    /// --process and --uid stand for the program that would ask.
    @Test func explainsOwnerRulesForTheProgramGiven() throws {
        let options = try MatchCommand.parse(["p.conf", "http://a.test/", "--process", "/usr/bin/curl", "--uid", "1000"]).get()
        var want = MatchCommand.Options(file: "p.conf", url: "http://a.test/")
        want.process = "/usr/bin/curl"
        want.userID = 1000
        #expect(options == want)

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("match-owner-\(getpid()).conf").path
        try "[Rule]\nPROCESS-PATH,/usr/bin/*,REJECT\nUID,1000,REJECT-DROP\nFINAL,DIRECT\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        func explain(_ arguments: [String]) throws -> String {
            var lines: [String] = []
            let status = MatchCommand(options: try MatchCommand.parse([path, "http://a.test/"] + arguments).get())
                .run(print: { lines.append($0) }, complain: { lines.append("complaint: \($0)") })
            #expect(status == 0)
            return lines.first { $0.contains("Rule:") } ?? lines.joined(separator: "\n")
        }
        #expect(try explain(["--process", "/usr/bin/curl"]).contains("line 2 (PROCESS-PATH,/usr/bin/*,REJECT) matches: the program /usr/bin/curl matches /usr/bin/*"))
        #expect(try explain(["--process", "curl", "--uid", "1000"]).contains("line 3 (UID,1000,REJECT-DROP) matches: the socket's owner, uid 1000, is in 1000"))
        #expect(try explain([]).contains("no rule matches; line 4 (FINAL,DIRECT) decides"))
    }

    @Test func rejectsBadUsage() {
        for bad: [String] in [[], ["p.conf"], ["p.conf", "http://a/", "extra"], ["p.conf", "http://a/", "--method"],
                              ["p.conf", "http://a/", "--process"], ["p.conf", "http://a/", "--uid", "alice"],
                              ["p.conf", "http://a/", "--header", "no colon"], ["p.conf", "http://a/", "--header", ": v"],
                              ["p.conf", "http://a/", "--frobnicate"]] {
            guard case .failure = MatchCommand.parse(bad[...]) else { Issue.record("accepted \(bad)"); continue }
        }
    }

    @Test func unreadableProfileFails() {
        var errors: [String] = []
        let status = MatchCommand(options: .init(file: "/nonexistent/sluice.conf", url: "http://a.test/"))
            .run(print: { _ in }, complain: { errors.append($0) })
        #expect(status == 1)
        #expect(errors.first?.hasPrefix("/nonexistent/sluice.conf: error: cannot read the profile") == true)
    }
}
