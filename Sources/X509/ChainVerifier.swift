/// Why a server's chain was refused, in terms the TLS layer turns into an
/// alert and the engine into a log line.
package enum ChainVerificationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A certificate did not parse.
    case malformed(index: Int, CertificateError)
    /// No path from the leaf to a trusted root.
    case untrusted(issuer: String)
    case expired(subject: String, notAfter: Int64)
    case notYetValid(subject: String, notBefore: Int64)
    /// The leaf names neither the host nor its address.
    case nameMismatch(host: String, names: [String])
    /// Usage, constraints or an extension this verifier cannot honour.
    case notPermitted(subject: String, reason: String)

    package var description: String {
        switch self {
        case .malformed(let index, let error): "certificate \(index) of the chain: \(error)"
        case .untrusted(let issuer): "no trusted root for \(issuer)"
        case .expired(let subject, let notAfter): "\(subject) expired at \(CivilTime.text(notAfter))"
        case .notYetValid(let subject, let notBefore): "\(subject) is not valid before \(CivilTime.text(notBefore))"
        case .nameMismatch(let host, let names): "the certificate is for \(names.isEmpty ? "no name" : names.joined(separator: ", ")), not \(host)"
        case .notPermitted(let subject, let reason): "\(subject): \(reason)"
        }
    }
}

/// Checks a TLS server's chain as RFC 5280 §6 and the CA/Browser Forum's
/// baseline expect, for what a server can present today: the leaf, then
/// intermediates in any order (extras allowed), ending at a root in the trust
/// store. Paths are built from the leaf upwards, issuers found by name and
/// confirmed by signature, trying each candidate in turn (cross-signed roots
/// give several), with the work bounded so a hostile chain cannot make it
/// search for long.
package enum ChainVerifier {
    /// At most this many certificates between leaf and root.
    static let maximumDepth = 8
    /// At most this many signature checks per chain.
    static let maximumSignatureChecks = 64

    /// The leaf, if the chain is good for `host` (a DNS name or an IP
    /// literal) at `now` (Unix seconds).
    package static func verify(chain: [[UInt8]], host: String, now: Int64, trustStore: TrustStore)
        throws(ChainVerificationError) -> Certificate
    {
        var certificates: [Certificate] = []
        for (index, der) in chain.enumerated() {
            do { certificates.append(try Certificate(derRepresentation: der)) } catch { throw .malformed(index: index, error) }
        }
        guard let leaf = certificates.first else { throw .untrusted(issuer: "an empty chain") }
        try checkLeaf(leaf, host: host)
        var budget = maximumSignatureChecks
        var used = Set<Int>([0])
        if try !build(from: leaf, depth: 0, presented: certificates, used: &used, now: now, trustStore: trustStore,
                      budget: &budget, constrainedBy: [])
        {
            throw .untrusted(issuer: leaf.issuer.description)
        }
        return leaf
    }

    /// §6.1.3 for the leaf: usage for TLS servers, the name, no unknown critical extension.
    private static func checkLeaf(_ leaf: Certificate, host: String) throws(ChainVerificationError) {
        let subject = leaf.subject.description
        guard !leaf.extensions.hasUnrecognizedCriticalExtension else {
            throw .notPermitted(subject: subject, reason: "an unrecognized critical extension")
        }
        guard leaf.extensions.permitsServerAuthentication else {
            throw .notPermitted(subject: subject, reason: "extendedKeyUsage does not include serverAuth")
        }
        if let usage = leaf.extensions.keyUsage, !usage.contains(.digitalSignature) {
            throw .notPermitted(subject: subject, reason: "keyUsage does not include digitalSignature")
        }
        guard leaf.matches(host: host) else {
            throw .nameMismatch(host: host, names: leaf.extensions.dnsNames + leaf.extensions.ipAddresses.map(Self.printAddress))
        }
    }

    /// Whether `child` leads to a trusted root. `constrainedBy` holds the
    /// certificates below whose names the CAs above must permit (the leaf and
    /// the intermediates so far).
    private static func build(from child: Certificate, depth: Int, presented: [Certificate], used: inout Set<Int>, now: Int64,
                              trustStore: TrustStore, budget: inout Int, constrainedBy below: [Certificate])
        throws(ChainVerificationError) -> Bool
    {
        try checkValidity(child, now: now)
        // A presented certificate that is itself a root ends the path.
        if depth > 0, trustStore.contains(child) { return true }
        let path = below + [child]
        // Roots first: the shortest path, and what a cross-signed root's
        // presented copy would otherwise lengthen.
        for anchor in trustStore.anchors(withSubject: child.issuer) {
            guard budget > 0 else { return false }
            budget -= 1
            if child.isSigned(by: anchor.subjectPublicKeyInfo.publicKey) {
                try checkValidity(anchor, now: now)
                try checkIssuer(anchor, intermediatesBelow: depth, path: path)
                return true
            }
        }
        guard depth < maximumDepth else { return false }
        for (index, candidate) in presented.enumerated() where !used.contains(index) && candidate.subject == child.issuer {
            guard budget > 0 else { return false }
            budget -= 1
            guard child.isSigned(by: candidate.subjectPublicKeyInfo.publicKey) else { continue }
            try checkIssuer(candidate, intermediatesBelow: depth, path: path)
            used.insert(index)
            if try build(from: candidate, depth: depth + 1, presented: presented, used: &used, now: now, trustStore: trustStore,
                         budget: &budget, constrainedBy: path)
            {
                return true
            }
            used.remove(index)
        }
        return false
    }

    private static func checkValidity(_ certificate: Certificate, now: Int64) throws(ChainVerificationError) {
        guard now >= certificate.notBefore else { throw .notYetValid(subject: certificate.subject.description, notBefore: certificate.notBefore) }
        guard now <= certificate.notAfter else { throw .expired(subject: certificate.subject.description, notAfter: certificate.notAfter) }
    }

    /// §6.1.4 for a certificate that signs another: a CA, allowed to sign
    /// certificates, with room in its path length, for TLS servers, and
    /// permitting the names of everything below it.
    private static func checkIssuer(_ issuer: Certificate, intermediatesBelow: Int, path: [Certificate]) throws(ChainVerificationError) {
        let subject = issuer.subject.description
        let extensions = issuer.extensions
        guard !extensions.hasUnrecognizedCriticalExtension else {
            throw .notPermitted(subject: subject, reason: "an unrecognized critical extension")
        }
        // v1 roots carry no extensions at all; every other issuer must say it is a CA.
        if issuer.version == 3 || extensions.basicConstraints != nil {
            guard let constraints = extensions.basicConstraints, constraints.isCertificateAuthority else {
                throw .notPermitted(subject: subject, reason: "not a CA (basicConstraints)")
            }
            if let limit = constraints.pathLenConstraint, intermediatesBelow > limit {
                throw .notPermitted(subject: subject, reason: "pathLenConstraint \(limit) exceeded")
            }
        }
        if let usage = extensions.keyUsage, !usage.contains(.keyCertSign) {
            throw .notPermitted(subject: subject, reason: "keyUsage does not include keyCertSign")
        }
        guard extensions.permitsServerAuthentication else {
            throw .notPermitted(subject: subject, reason: "extendedKeyUsage does not include serverAuth")
        }
        if let constraints = extensions.nameConstraints, let leaf = path.first {
            try check(leaf, against: constraints, issuer: subject)
        }
    }

    /// §4.2.1.10 for the leaf's DNS names and addresses (the names a TLS
    /// client checks). Subtrees of other forms (directoryName, rfc822Name)
    /// constrain names of their own form only, so they do not apply here.
    private static func check(_ leaf: Certificate, against constraints: NameConstraints, issuer: String) throws(ChainVerificationError) {
        func within(_ subtree: GeneralSubtree, dnsName: String?, address: [UInt8]?) -> Bool? {
            switch subtree {
            case .dNSName(let base):
                guard let dnsName else { return nil }
                return dnsNameIsWithin(dnsName, base)
            case .iPAddress(let network, let mask):
                guard let address, address.count == network.count else { return nil }
                return address.indices.allSatisfy { address[$0] & mask[$0] == network[$0] & mask[$0] }
            case .unsupported:
                return nil
            }
        }
        let names: [(String?, [UInt8]?)] = leaf.extensions.dnsNames.map { ($0, nil) } + leaf.extensions.ipAddresses.map { (nil, $0) }
        for (dnsName, address) in names {
            let shown = dnsName ?? address.map(printAddress) ?? ""
            for subtree in constraints.excludedSubtrees where within(subtree, dnsName: dnsName, address: address) == true {
                throw .notPermitted(subject: issuer, reason: "nameConstraints exclude \(shown)")
            }
            // Permitted subtrees of this name's form, if any, must include it.
            let sameForm = constraints.permittedSubtrees.compactMap { within($0, dnsName: dnsName, address: address) }
            if !sameForm.isEmpty, !sameForm.contains(true) {
                throw .notPermitted(subject: issuer, reason: "nameConstraints do not permit \(shown)")
            }
        }
    }

    /// RFC 5280 §4.2.1.10: a DNS constraint matches the name and any name
    /// made by adding labels on the left; a leading dot (a common variant)
    /// means subdomains only.
    static func dnsNameIsWithin(_ name: String, _ base: String) -> Bool {
        let name = name.lowercased()
        var base = base.lowercased()
        if base.isEmpty { return true }
        if base.hasPrefix(".") {
            return name.hasSuffix(base)
        }
        if name == base { return true }
        base = "." + base
        return name.hasSuffix(base)
    }

    static func printAddress(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: bytes.count - 1, by: 2)
            .map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
    }
}
