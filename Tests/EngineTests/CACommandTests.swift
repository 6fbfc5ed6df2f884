import Foundation
import Glibc
import Testing
@testable import Engine

/// `sluice ca [--dir DIR]`: its arguments, and what it tells the user on a
/// real folder (the files, the fingerprint, whether the CA is new).
@Suite struct CACommandTests {
    func withScratch(_ body: (String) throws -> Void) throws {
        let scratch = FileManager.default.temporaryDirectory.path + "/sluice-ca-command-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try body(scratch)
    }

    func parse(_ arguments: [String]) -> Result<CACommand.Options, UsageError> {
        CACommand.parse(arguments[...])
    }

    func usage(_ arguments: [String]) -> String? {
        guard case let .failure(error) = parse(arguments) else { return nil }
        return error.description
    }

    func run(directory: String) -> (status: Int32, printed: [String], complaints: [String]) {
        var printed: [String] = [], complaints: [String] = []
        let status = CACommand(options: CACommand.Options(directory: directory))
            .run(print: { printed.append($0) }, complain: { complaints.append($0) })
        return (status, printed, complaints)
    }

    /// The output's lines, multi-line prints split, for matching whole lines.
    func lines(_ printed: [String]) -> [String] {
        printed.flatMap { $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
    }

    // MARK: Arguments

    @Test func noArgumentsUseTheDefaultFolder() throws {
        #expect(try parse([]).get() == CACommand.Options(directory: nil))
    }

    @Test func dirNamesTheFolder() throws {
        #expect(try parse(["--dir", "/srv/ca"]).get() == CACommand.Options(directory: "/srv/ca"))
        // As exec, run and proxy spell it (and their messages say "choose another with --ca-dir").
        #expect(try parse(["--ca-dir", "/srv/ca"]).get() == CACommand.Options(directory: "/srv/ca"))
        // The last one wins, as with most options.
        #expect(try parse(["--dir", "/a", "--dir", "/b"]).get().directory == "/b")
    }

    @Test func dirWithoutAValueIsAUsageError() throws {
        let message = try #require(usage(["--dir"]))
        #expect(message == "sluice ca: --dir needs a folder")
    }

    @Test(arguments: [["--force"], ["/srv/ca"], ["--dir", "/srv/ca", "extra"], ["-d", "/srv/ca"]])
    func anythingElseIsAUsageErrorNamingIt(arguments: [String]) throws {
        let message = try #require(usage(arguments))
        let offending = arguments.count == 3 ? arguments[2] : arguments[0]
        #expect(message.hasPrefix("sluice ca: unknown option '\(offending)'"), "\(message)")
        #expect(message.contains("sluice ca [--dir DIR]"))
    }

    // MARK: Running

    @Test func theFirstRunMakesTheCAAndTheSecondFindsIt() throws {
        try withScratch { scratch in
            let directory = scratch + "/ca"
            let first = run(directory: directory)
            #expect(first.status == 0)
            #expect(first.complaints.isEmpty)
            let firstLines = lines(first.printed)
            #expect(firstLines.first == "made a new CA")
            #expect(firstLines.contains("ca.pem: \(directory)/ca.pem"))
            #expect(firstLines.contains { $0.hasPrefix("ca.key: \(directory)/ca.key") })
            let fingerprintLine = try #require(firstLines.first { $0.hasPrefix("SHA-256 fingerprint: ") })
            let fingerprint = String(fingerprintLine.dropFirst("SHA-256 fingerprint: ".count))
            #expect(fingerprint.count == 32 * 3 - 1)
            // The trust instructions name the real file, not a placeholder.
            #expect(firstLines.contains { $0.contains("cp \(directory)/ca.pem /usr/local/share/ca-certificates/") })

            let second = run(directory: directory)
            #expect(second.status == 0)
            let secondLines = lines(second.printed)
            #expect(secondLines.first == "the CA exists")
            #expect(secondLines.contains("SHA-256 fingerprint: \(fingerprint)"))
            #expect(secondLines.dropFirst() == firstLines.dropFirst(), "only the first line says which run made it")
        }
    }

    @Test func theFingerprintPrintedIsTheCAs() throws {
        try withScratch { scratch in
            let result = run(directory: scratch)
            let ca = try InterceptionCA.load(directory: scratch, create: false)
            #expect(lines(result.printed).contains("SHA-256 fingerprint: \(ca.fingerprint)"))
        }
    }

    @Test func aRefusedFolderFailsWithAComplaint() throws {
        try withScratch { scratch in
            #expect(chmod(scratch, 0o777) == 0)
            let result = run(directory: scratch)
            #expect(result.status == 1)
            #expect(result.printed.isEmpty, "no fingerprint for a CA that was not loaded")
            #expect(result.complaints.count == 1)
            let complaint = try #require(result.complaints.first)
            #expect(complaint.hasPrefix("sluice: error: ca: \(scratch): refused"), "\(complaint)")
        }
    }

    @Test func aBrokenCAFailsWithAComplaint() throws {
        try withScratch { scratch in
            #expect(run(directory: scratch).status == 0)
            #expect(unlink(scratch + "/ca.key") == 0)
            let result = run(directory: scratch)
            #expect(result.status == 1)
            #expect(result.complaints == ["sluice: error: ca: \(scratch)/ca.key: missing beside \(scratch)/ca.pem; remove the other to make a new CA"])
        }
    }
}
