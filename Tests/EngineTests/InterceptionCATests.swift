import Foundation
import Glibc
import Testing
@testable import Engine

/// Sluice's CA on disk. Whoever can plant or read these files can read every
/// intercepted connection, so most tests here are refusals: each makes a
/// good CA, spoils one thing, and checks that loading names what is wrong.
/// Ownership is compared with geteuid, so these hold as root too.
@Suite struct InterceptionCATests {
    /// A fresh private folder per test (tests run in parallel), removed after.
    func withScratch(_ body: (String) throws -> Void) throws {
        let scratch = FileManager.default.temporaryDirectory.path + "/sluice-ca-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try body(scratch)
    }

    /// Permission bits as lstat sees them (a link's own, not its target's); nil when absent.
    func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// The refusal's text, or nil when the CA loads.
    func refusal(_ directory: String, create: Bool = true) -> String? {
        do {
            _ = try InterceptionCA.load(directory: directory, create: create)
            return nil
        } catch {
            return error.description
        }
    }

    func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map(Array.init) }

    func replace(_ path: String, with text: String, mode: mode_t = 0o600) throws {
        try? FileManager.default.removeItem(atPath: path)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: Int(mode)]))
        #expect(chmod(path, mode) == 0)
    }

    // MARK: Making and finding

    /// `--ca-dir rel/ca` is relative to where Sluice started: it once made
    /// `/rel` at the root, then failed to find the folder it had just made.
    @Test func aRelativeFolderIsUnderTheWorkingDirectory() throws {
        let top = "sluice-ca-relative-" + UUID().uuidString
        let working = FileManager.default.currentDirectoryPath
        defer {
            try? FileManager.default.removeItem(atPath: working + "/" + top)
            try? FileManager.default.removeItem(atPath: "/" + top)
        }
        let ca = try InterceptionCA.load(directory: top + "/ca", create: true)
        #expect(ca.created)
        #expect(ca.certificatePath == working + "/" + top + "/ca/ca.pem")
        #expect(isRegularFile(working + "/" + top + "/ca/ca.key"))
        #expect(!FileManager.default.fileExists(atPath: "/" + top))
    }

    @Test func aFileWhereTheFolderShouldBeIsNotAFolder() throws {
        try withScratch { scratch in
            let path = scratch + "/ca"
            try replace(path, with: "not a folder")
            let message = try #require(refusal(path))
            #expect(message == "\(path): not a folder; choose another with --ca-dir")
        }
    }

    @Test func theFirstLoadMakesPrivateFiles() throws {
        try withScratch { scratch in
            let directory = scratch + "/ca"
            let ca = try InterceptionCA.load(directory: directory, create: true)
            #expect(ca.created)
            #expect(ca.directory == directory)
            #expect(ca.certificatePath == directory + "/ca.pem")
            #expect(ca.keyPath == directory + "/ca.key")
            #expect(mode(directory) == 0o700)
            for path in [ca.certificatePath, ca.keyPath] {
                #expect(isRegularFile(path), "\(path)")
                #expect(mode(path) == 0o600, "\(path)")
            }
            #expect(contents(ca.certificatePath) == Array(ca.pem.utf8))
            let key = String(decoding: try #require(contents(ca.keyPath)), as: UTF8.self)
            #expect(key.hasPrefix("-----BEGIN EC PRIVATE KEY-----\n"))
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)) == ["ca.pem", "ca.key"])
        }
    }

    /// `~/.local/share` may be missing on a fresh account.
    @Test func missingParentsAreMadePrivate() throws {
        try withScratch { scratch in
            let directory = scratch + "/local/share/sluice"
            let ca = try InterceptionCA.load(directory: directory, create: true)
            #expect(ca.created)
            for path in [scratch + "/local", scratch + "/local/share", directory] {
                #expect(mode(path) == 0o700, "\(path)")
            }
        }
    }

    @Test func theSecondLoadFindsTheSameCA() throws {
        try withScratch { scratch in
            let first = try InterceptionCA.load(directory: scratch, create: true)
            let pem = contents(first.certificatePath)
            let key = contents(first.keyPath)
            let second = try InterceptionCA.load(directory: scratch, create: true)
            #expect(first.created && !second.created)
            #expect(second.fingerprint == first.fingerprint)
            #expect(second.pem == first.pem)
            #expect(contents(first.certificatePath) == pem && contents(first.keyPath) == key, "the files are left as they were")
            let third = try InterceptionCA.load(directory: scratch, create: false)
            #expect(!third.created && third.fingerprint == first.fingerprint)
        }
    }

    @Test func twoCAsDiffer() throws {
        try withScratch { scratch in
            let one = try InterceptionCA.load(directory: scratch + "/one", create: true)
            let two = try InterceptionCA.load(directory: scratch + "/two", create: true)
            #expect(one.fingerprint != two.fingerprint)
            #expect(contents(one.keyPath) != contents(two.keyPath))
        }
    }

    @Test func theFingerprintIs32UppercaseHexPairs() throws {
        try withScratch { scratch in
            let fingerprint = try InterceptionCA.load(directory: scratch, create: true).fingerprint
            let pairs = fingerprint.split(separator: ":", omittingEmptySubsequences: false)
            #expect(pairs.count == 32)
            #expect(pairs.allSatisfy { $0.count == 2 && $0.allSatisfy { "0123456789ABCDEF".contains($0) } }, "\(fingerprint)")
        }
    }

    static let openSSLPath = ["/usr/bin/openssl", "/usr/local/bin/openssl", "/bin/openssl"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    func runOpenSSL(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(Self.openSSLPath))
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// The fingerprint a user compares with what a browser or `openssl` shows:
    /// the SHA-256 of the certificate's DER, as OpenSSL prints it.
    @Test(.enabled(if: InterceptionCATests.openSSLPath != nil, "needs openssl"))
    func theFingerprintIsOpenSSLs() throws {
        try withScratch { scratch in
            let ca = try InterceptionCA.load(directory: scratch, create: true)
            let result = try runOpenSSL(["x509", "-noout", "-fingerprint", "-sha256", "-in", ca.certificatePath])
            #expect(result.status == 0)
            let printed = try #require(result.output.split(separator: "=").last)
            #expect(printed.trimmingCharacters(in: .whitespacesAndNewlines) == ca.fingerprint)
        }
    }

    /// A user trusts ca.pem as a root, so it must say it is a CA.
    @Test(.enabled(if: InterceptionCATests.openSSLPath != nil, "needs openssl"))
    func theCertificateIsACAForOpenSSL() throws {
        try withScratch { scratch in
            let ca = try InterceptionCA.load(directory: scratch, create: true)
            let result = try runOpenSSL(["x509", "-noout", "-ext", "basicConstraints", "-in", ca.certificatePath])
            #expect(result.status == 0)
            #expect(result.output.contains("CA:TRUE"), "\(result.output)")
            let key = try runOpenSSL(["ec", "-noout", "-check", "-in", ca.keyPath])
            #expect(key.status == 0, "ca.key is a key OpenSSL reads")
        }
    }

    /// A CA made elsewhere (here by OpenSSL, its key in PKCS #8) is used as it is.
    @Test(.enabled(if: InterceptionCATests.openSSLPath != nil, "needs openssl"))
    func aCAMadeByOpenSSLLoads() throws {
        try withScratch { scratch in
            let made = try runOpenSSL(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                    "-keyout", scratch + "/ca.key", "-out", scratch + "/ca.pem", "-subj", "/CN=Own CA",
                                    "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE"])
            try #require(made.status == 0)
            #expect(chmod(scratch + "/ca.key", 0o600) == 0)
            let ca = try InterceptionCA.load(directory: scratch, create: false)
            #expect(!ca.created)
            let printed = try runOpenSSL(["x509", "-noout", "-fingerprint", "-sha256", "-in", ca.certificatePath]).output
            #expect(printed.hasSuffix("=" + ca.fingerprint + "\n"))
        }
    }

    /// A certificate that may not sign others is no use as the CA, key or not.
    @Test(.enabled(if: InterceptionCATests.openSSLPath != nil, "needs openssl"))
    func aCertificateThatIsNotACAIsRefused() throws {
        try withScratch { scratch in
            let made = try runOpenSSL(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                    "-keyout", scratch + "/ca.key", "-out", scratch + "/ca.pem", "-subj", "/CN=leaf.test",
                                    "-days", "30", "-addext", "basicConstraints=critical,CA:FALSE"])
            try #require(made.status == 0)
            #expect(chmod(scratch + "/ca.key", 0o600) == 0)
            let reason = try #require(refusal(scratch))
            #expect(reason.contains("not a CA"), "\(reason)")
        }
    }

    // MARK: Nothing there

    @Test func anEmptyFolderWithoutCreateNamesTheCommand() throws {
        try withScratch { scratch in
            let reason = try #require(refusal(scratch, create: false))
            #expect(reason.contains("sluice ca"), "\(reason)")
            #expect(reason.hasPrefix(scratch + "/ca.pem"), "\(reason)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch).isEmpty, "nothing was made")
        }
    }

    @Test func aMissingFolderWithoutCreateIsNotMade() throws {
        try withScratch { scratch in
            let directory = scratch + "/absent"
            let reason = try #require(refusal(directory, create: false))
            #expect(reason.contains("sluice ca --dir \(directory)"), "\(reason)")
            #expect(mode(directory) == nil)
        }
    }

    // MARK: The folder

    @Test(arguments: [0o770, 0o775, 0o702, 0o777] as [mode_t])
    func aFolderOthersMayWriteIsRefused(folderMode: mode_t) throws {
        try withScratch { scratch in
            _ = try InterceptionCA.load(directory: scratch, create: true)
            #expect(chmod(scratch, folderMode) == 0)
            let reason = try #require(refusal(scratch))
            #expect(reason.hasPrefix(scratch + ": refused"), "\(reason)")
            #expect(reason.contains("chmod 700 \(scratch)"), "\(reason)")
        }
    }

    /// A shared folder is refused before anything is written into it.
    @Test func noCAIsMadeInAFolderOthersMayWrite() throws {
        try withScratch { scratch in
            #expect(chmod(scratch, 0o770) == 0)
            #expect(refusal(scratch) != nil)
            let names = try FileManager.default.contentsOfDirectory(atPath: scratch)
            #expect(names.isEmpty)
        }
    }

    @Test func aFolderThatIsALinkIsRefused() throws {
        try withScratch { scratch in
            _ = try InterceptionCA.load(directory: scratch + "/real", create: true)
            try FileManager.default.createSymbolicLink(atPath: scratch + "/link", withDestinationPath: scratch + "/real")
            let reason = try #require(refusal(scratch + "/link"))
            #expect(reason.hasPrefix(scratch + "/link: refused"), "\(reason)")
        }
    }

    // MARK: The files

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o700] as [mode_t])
    func aKeyOthersMayReadOrWriteIsRefused(keyMode: mode_t) throws {
        try withScratch { scratch in
            let ca = try InterceptionCA.load(directory: scratch, create: true)
            #expect(chmod(ca.keyPath, keyMode) == 0)
            let reason = refusal(scratch)
            if keyMode & 0o077 == 0 {
                // 0700 is still private: only others' bits matter.
                #expect(reason == nil)
            } else {
                let reason = try #require(reason)
                #expect(reason.hasPrefix(ca.keyPath + ": refused"), "\(reason)")
                #expect(reason.contains("ca.key") && reason.contains("chmod 600 \(ca.keyPath)"), "\(reason)")
            }
        }
    }

    /// The certificate is public: others may read it, not write it.
    @Test func theCertificateMayBeReadableButNotWritableByOthers() throws {
        try withScratch { scratch in
            let ca = try InterceptionCA.load(directory: scratch, create: true)
            #expect(chmod(ca.certificatePath, 0o644) == 0)
            #expect(refusal(scratch) == nil)
            #expect(chmod(ca.certificatePath, 0o664) == 0)
            let reason = try #require(refusal(scratch))
            #expect(reason.hasPrefix(ca.certificatePath + ": refused"), "\(reason)")
        }
    }

    /// A link is refused even to a file that would pass: it can be re-pointed later.
    @Test(arguments: ["ca.key", "ca.pem"])
    func aFileThatIsALinkIsRefused(name: String) throws {
        try withScratch { scratch in
            _ = try InterceptionCA.load(directory: scratch, create: true)
            let path = scratch + "/" + name
            #expect(rename(path, path + ".real") == 0)
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: path + ".real")
            let reason = try #require(refusal(scratch))
            #expect(reason.hasPrefix(path + ": refused"), "\(reason)")
        }
    }

    /// A dangling link where the key would go counts as a key: making a CA
    /// would otherwise write the new key wherever the link points.
    @Test func aDanglingKeyLinkIsNotWrittenThrough() throws {
        try withScratch { scratch in
            let target = scratch + "/elsewhere"
            try FileManager.default.createSymbolicLink(atPath: scratch + "/ca.key", withDestinationPath: target)
            let reason = try #require(refusal(scratch))
            #expect(reason.hasPrefix(scratch + "/ca.pem: missing"), "\(reason)")
            #expect(mode(target) == nil)
            #expect(mode(scratch + "/ca.pem") == nil)
        }
    }

    /// With one file of the pair gone no new CA is made over the other:
    /// the certificate may already be trusted somewhere.
    @Test(arguments: ["ca.pem", "ca.key"])
    func oneFileMissingIsRefusedByName(missing: String) throws {
        try withScratch { scratch in
            let ca = try InterceptionCA.load(directory: scratch, create: true)
            let other = missing == "ca.pem" ? ca.keyPath : ca.certificatePath
            let kept = contents(other)
            #expect(unlink(scratch + "/" + missing) == 0)
            let reason = try #require(refusal(scratch))
            #expect(reason.hasPrefix(scratch + "/" + missing + ": missing beside " + other), "\(reason)")
            #expect(contents(other) == kept)
            #expect(mode(scratch + "/" + missing) == nil)
        }
    }

    @Test(arguments: [
        "garbage\n",
        "-----BEGIN CERTIFICATE-----\nAAECAwQF\n-----END CERTIFICATE-----\n",
        "-----BEGIN CERTIFICATE-----\nAAECAwQF\n",
        "-----BEGIN PUBLIC KEY-----\nAAECAwQF\n-----END PUBLIC KEY-----\n",
    ])
    func aCertificateThatIsNotOneIsRefusedByName(text: String) throws {
        try withScratch { scratch in
            let ca = try InterceptionCA.load(directory: scratch, create: true)
            try replace(ca.certificatePath, with: text)
            let reason = try #require(refusal(scratch))
            #expect(reason.hasPrefix(ca.certificatePath + ": "), "\(reason)")
        }
    }

    @Test(arguments: [
        "garbage\n",
        "-----BEGIN EC PRIVATE KEY-----\nAAECAwQF\n-----END EC PRIVATE KEY-----\n",
        "-----BEGIN EC PRIVATE KEY-----\nAAECAwQF\n",
    ])
    func aKeyThatIsNotOneIsRefusedByName(text: String) throws {
        try withScratch { scratch in
            let ca = try InterceptionCA.load(directory: scratch, create: true)
            try replace(ca.keyPath, with: text)
            let reason = try #require(refusal(scratch))
            #expect(reason.hasPrefix(ca.keyPath + ": "), "\(reason)")
        }
    }

    @Test func anotherCAsKeyIsRefused() throws {
        try withScratch { scratch in
            let one = try InterceptionCA.load(directory: scratch + "/one", create: true)
            let two = try InterceptionCA.load(directory: scratch + "/two", create: true)
            let key = String(decoding: try #require(contents(two.keyPath)), as: UTF8.self)
            try replace(one.keyPath, with: key)
            let reason = try #require(refusal(one.directory))
            #expect(reason.hasPrefix(one.keyPath + ": not the key of " + one.certificatePath), "\(reason)")
            // The second CA is unharmed by the copy.
            #expect(refusal(two.directory) == nil)
        }
    }

    // MARK: Where it lives

    @Test func theDefaultFolderFollowsTheUser() {
        let directory = InterceptionCA.defaultDirectory
        if geteuid() == 0 {
            #expect(directory == "/var/lib/sluice")
        } else if let data = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            #expect(directory == data + "/sluice")
        } else {
            #expect(directory == (ProcessInfo.processInfo.environment["HOME"] ?? "/tmp") + "/.local/share/sluice")
        }
    }
}
