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

    @Test func rejectsBadUsage() {
        for bad: [String] in [[], ["p.conf"], ["p.conf", "http://a/", "extra"], ["p.conf", "http://a/", "--method"],
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
