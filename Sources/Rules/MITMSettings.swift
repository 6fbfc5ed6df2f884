/// [MITM]: which HTTPS flows Sluice decrypts, with its own CA (`sluice ca`),
/// so that its HTTP sections apply to their requests, and how it treats them.
public struct MITMSettings: Sendable, Equatable {
    /// `hostname`'s items in order, inclusions and exclusions mixed.
    public var hostnames: [MITMHostPattern]
    /// `skip-server-cert-verify`: upstream certificates are not checked (test
    /// servers with self-signed certificates).
    public var skipServerCertificateVerification: Bool
    /// `auto-quic-block`: QUIC to intercepted names is refused, so apps fall back to TCP.
    public var blocksQUIC: Bool
    /// `h2`: an app that offers both HTTP/2 and HTTP/1.1 speaks HTTP/2 to
    /// Sluice (as Surge's key says); otherwise HTTP/1.1, and HTTP/2 only
    /// with apps that offer nothing else.
    public var prefersHTTP2 = false
    /// The `hostname` line, for messages; nil without one.
    public var line: Int?

    /// No inclusion pattern: nothing is intercepted.
    public var isEmpty: Bool { !hostnames.contains { !$0.excludes } }

    public init(hostnames: [MITMHostPattern] = [], skipServerCertificateVerification: Bool = false,
                blocksQUIC: Bool = true, line: Int? = nil) {
        self.hostnames = hostnames; self.skipServerCertificateVerification = skipServerCertificateVerification
        self.blocksQUIC = blocksQUIC; self.line = line
    }

    /// Whether HTTPS to `host` (a name, in any case, or an address's text) on
    /// `port` is intercepted: some inclusion matches and no exclusion does.
    public func intercepts(host: String, port: UInt16) -> Bool {
        if case .intercepted = verdict(host: host, port: port) { return true }
        return false
    }

    enum Verdict: Equatable {
        case intercepted(by: MITMHostPattern)
        case excluded(by: MITMHostPattern)
        case notListed
    }

    /// Which item decides, for messages: an exclusion wins wherever it is
    /// written, so the scan goes on past an inclusion.
    func verdict(host: String, port: UInt16) -> Verdict {
        guard !isEmpty else { return .notListed }
        let subject = MITMHostPattern.subject(host)
        var included: MITMHostPattern?
        for pattern in hostnames where (pattern.excludes || included == nil) && pattern.matches(subject, port: port) {
            if pattern.excludes { return .excluded(by: pattern) }
            included = pattern
        }
        return included.map { .intercepted(by: $0) } ?? .notListed
    }
}
