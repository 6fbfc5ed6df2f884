/// The roots a chain may end at: the system's bundle (Debian's
/// /etc/ssl/certs/ca-certificates.crt, read by the engine) or a test's own.
/// Indexed by subject so each step of path building looks up its issuers.
package struct TrustStore: Sendable {
    package let anchors: [Certificate]
    private let bySubject: [[UInt8]: [Int]]
    /// Certificates in the bundle that did not parse; reported, not fatal.
    package let skippedCount: Int

    package init(certificates: [Certificate], skippedCount: Int = 0) {
        anchors = certificates
        var index: [[UInt8]: [Int]] = [:]
        for (i, certificate) in certificates.enumerated() {
            index[certificate.subject.derRepresentation, default: []].append(i)
        }
        bySubject = index
        self.skippedCount = skippedCount
    }

    /// Every CERTIFICATE block of a PEM bundle; others are ignored.
    package init(pemBundle text: String) throws(PEMError) {
        var certificates: [Certificate] = []
        var skipped = 0
        for der in try PEM.decodeAll(text, label: "CERTIFICATE") {
            if let certificate = try? Certificate(derRepresentation: der) { certificates.append(certificate) } else { skipped += 1 }
        }
        self.init(certificates: certificates, skippedCount: skipped)
    }

    func anchors(withSubject subject: DistinguishedName) -> [Certificate] {
        (bySubject[subject.derRepresentation] ?? []).map { anchors[$0] }
    }

    func contains(_ certificate: Certificate) -> Bool {
        anchors(withSubject: certificate.subject).contains { $0.derRepresentation == certificate.derRepresentation }
    }
}
