internal import Crypto
internal import Sys
internal import X509

/// Sluice's CA on disk: `ca.pem` (the certificate a user trusts) and
/// `ca.key` (mode 0600) in one folder of the user's own. Made once, by
/// `sluice ca` or by the first run whose profile has [MITM] hostnames, and
/// kept: a CA that changed every run would have to be trusted again each
/// time. The folder and both files are refused when they are links, someone
/// else's, or writable by others (the key also readable by others), as the
/// run directory is: a CA someone else can plant is a key to every
/// intercepted connection.
struct InterceptionCA {
    var authority: InterceptionAuthority
    let directory: String
    /// It was made by this call.
    let created: Bool

    var certificatePath: String { directory + "/ca.pem" }
    var keyPath: String { directory + "/ca.key" }
    var pem: String { PEM.encode(label: "CERTIFICATE", derBytes: authority.certificate.derRepresentation) }

    /// Where the CA lives unless `--ca-dir` says: /var/lib/sluice for root,
    /// else `$XDG_DATA_HOME/sluice` (`~/.local/share/sluice` without it).
    static var defaultDirectory: String {
        if ProcessControl.effectiveUserID == 0 { return "/var/lib/sluice" }
        if let data = ProcessControl.environment("XDG_DATA_HOME"), data.hasPrefix("/") { return data + "/sluice" }
        return (ProcessControl.environment("HOME") ?? "/tmp") + "/.local/share/sluice"
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The CA in `directory`, made there first when `create` allows and none exists.
    static func load(directory given: String, create: Bool) throws(Failure) -> InterceptionCA {
        // Relative to where Sluice was started (`makeParents` walks from /).
        let directory = given.hasPrefix("/") ? given : (Files.currentDirectory() ?? "") + "/" + given
        let certificatePath = directory + "/ca.pem"
        let keyPath = directory + "/ca.key"
        if Files.kind(of: directory) == nil, create { makeParents(of: directory) }
        if Files.kind(of: directory) == nil, create { _ = Files.makePrivateDirectory(directory) }
        guard Files.kind(of: directory) != nil else {
            throw Failure(description: "\(directory): no such folder (run `sluice ca --dir \(directory)` to make the CA there)")
        }
        guard Files.kind(of: directory) == .directory || Files.readLink(directory) != nil else {
            throw Failure(description: "\(directory): not a folder; choose another with --ca-dir")
        }
        if Files.readLink(directory) != nil, !Files.isOwnDirectory(directory) {
            // A link is refused whatever its mode: chmod would not help.
            throw Failure(description: "\(directory): refused: the CA's folder must not be a link; give the folder it points to, or choose another with --ca-dir")
        }
        guard Files.isOwnDirectory(directory) else {
            throw Failure(description: "\(directory): refused: the CA's folder must be a folder of this user's that nobody else may write (not a link); fix with `chmod 700 \(directory)`, or choose another with --ca-dir")
        }
        let hasCertificate = Files.kind(of: certificatePath) != nil || Files.readLink(certificatePath) != nil
        let hasKey = Files.kind(of: keyPath) != nil || Files.readLink(keyPath) != nil
        if !hasCertificate, !hasKey {
            guard create else { throw Failure(description: "\(certificatePath): no CA yet (run `sluice ca --dir \(directory)`)") }
            return try make(directory: directory)
        }
        guard hasCertificate, hasKey else {
            throw Failure(description: "\(hasCertificate ? keyPath : certificatePath): missing beside \(hasCertificate ? certificatePath : keyPath); remove the other to make a new CA")
        }
        guard Files.isOwnFile(certificatePath, secret: false) else {
            throw Failure(description: "\(certificatePath): refused: must be a file of this user's that nobody else may write (not a link)")
        }
        guard Files.isOwnFile(keyPath, secret: true) else {
            throw Failure(description: "\(keyPath): refused: must be a file of this user's that nobody else may read or write (not a link); fix with `chmod 600 \(keyPath)`")
        }
        guard let certificateText = Files.read(certificatePath).map({ String(decoding: $0, as: UTF8.self) }),
              let keyText = Files.read(keyPath).map({ String(decoding: $0, as: UTF8.self) })
        else { throw Failure(description: "\(directory): cannot read the CA's files") }
        let certificate: Certificate
        do {
            guard let der = try PEM.decodeAll(certificateText, label: "CERTIFICATE").first else {
                throw Failure(description: "\(certificatePath): no CERTIFICATE block")
            }
            certificate = try Certificate(derRepresentation: der)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: "\(certificatePath): not a certificate: \(error)")
        }
        let documents: [PEMDocument]
        do { documents = try PEM.decodeAll(keyText) } catch {
            throw Failure(description: "\(keyPath): not PEM: \(error)")
        }
        guard let key = documents.lazy.compactMap({ ECPrivateKeyDER.decode($0.derBytes) }).first else {
            throw Failure(description: "\(keyPath): no P-256 private key (EC PRIVATE KEY or PRIVATE KEY)")
        }
        guard let authority = InterceptionAuthority(certificate: certificate, key: key, leafKeyRandom: SystemRandom.bytes(48)) else {
            throw Failure(description: "\(keyPath): not the key of \(certificatePath), or that certificate is not a CA")
        }
        return InterceptionCA(authority: authority, directory: directory, created: false)
    }

    private static func make(directory: String) throws(Failure) -> InterceptionCA {
        let now = Int64(WallClock.now() / 1_000_000_000)
        let authority: InterceptionAuthority
        do { authority = try InterceptionAuthority.create(commonName: "Sluice Interception CA", now: now, random: SystemRandom.bytes) } catch {
            throw Failure(description: "making the CA: \(error)")
        }
        let ca = InterceptionCA(authority: authority, directory: directory, created: true)
        // The key first: a certificate without its key would only block the next run.
        do {
            try Files.createPrivate(Array(PEM.encode(label: "EC PRIVATE KEY", derBytes: authority.keyDER).utf8), at: ca.keyPath)
        } catch { throw Failure(description: "\(ca.keyPath): \(error)") }
        do { try Files.createPrivate(Array(ca.pem.utf8), at: ca.certificatePath) } catch {
            Files.remove(ca.keyPath)
            throw Failure(description: "\(ca.certificatePath): \(error)")
        }
        return ca
    }

    /// `~/.local/share` may not exist on a fresh account.
    private static func makeParents(of directory: String) {
        var path = ""
        for component in directory.split(separator: "/").dropLast() {
            path += "/" + component
            if Files.kind(of: path) == nil { _ = Files.makePrivateDirectory(path) }
        }
    }

    /// The certificate's SHA-256 as `openssl x509 -fingerprint -sha256` prints it.
    var fingerprint: String {
        let hexDigits = Array("0123456789ABCDEF")
        return SHA256.hash(authority.certificate.derRepresentation)
            .map { String([hexDigits[Int($0 >> 4)], hexDigits[Int($0 & 15)]]) }.joined(separator: ":")
    }
}
