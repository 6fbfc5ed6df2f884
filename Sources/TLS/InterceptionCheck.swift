internal import Crypto

/// Before Sluice answers an app's ClientHello itself, whether it can: the
/// engine looks at the hello it sniffed and passes through, untouched,
/// every connection its `TLSServer` would have to refuse (an app that
/// offers only TLS 1.2, or only h2), since a refusal would break an app
/// that works without Sluice.
package enum InterceptionCheck {
    /// Why the hello at the start of `bytes` (plaintext records) cannot be
    /// intercepted; nil when it can. "Need more bytes" is a reason too: the
    /// sniffer hands over a whole hello or gives up.
    package static func obstacle(inFirstRecords bytes: [UInt8], protocols supported: [[UInt8]]) -> String? {
        var records = RecordFramer()
        records.append(bytes)
        var messages = HandshakeFramer()
        // A hello spans a few records at most (bounded by the sniffer's 16 KiB).
        for _ in 0 ..< 64 {
            let record: TLSRecord?
            do { record = try records.nextRecord() } catch { return "not a TLS record: \(error)" }
            guard let record else { return "the ClientHello is incomplete" }
            guard record.type == .handshake else { return "\(record.type) before the ClientHello" }
            // §5.1: the server's record layer refuses these.
            guard !record.body.isEmpty else { return "an empty handshake record" }
            messages.append(record.body)
            let message: HandshakeMessage?
            do { message = try messages.nextMessage() } catch { return "\(error)" }
            guard let message else { continue }
            guard message.type == .clientHello else { return "\(message.type) instead of a ClientHello" }
            // §5.1: the server switches keys after the hello; bytes of another message may not come with it.
            guard messages.isEmpty else { return "another handshake message begins in the ClientHello's record" }
            do {
                let hello = try ClientHello(body: message.body)
                // What the server reads from the hello, read the same way.
                _ = try hello.serverName()
                if let share = try hello.keyShares().first(where: { $0.group == .x25519 }),
                   X25519.sharedSecret(privateKey: Self.probeKey, peerPublicKey: share.keyExchange) == nil
                {
                    return "an X25519 share that is not a usable key"
                }
                guard try hello.supportedVersions().contains(ProtocolVersion.tls13) else { return "the app does not offer TLS 1.3" }
                guard TLSServer.suitePreference.contains(where: { hello.cipherSuites.contains($0.rawValue) }) else {
                    return "no cipher suite Sluice speaks"
                }
                guard try hello.signatureAlgorithms().contains(.ecdsaSecp256r1SHA256) else { return "the app does not accept ECDSA P-256" }
                guard try hello.supportedGroups().contains(.x25519) else { return "the app does not offer X25519" }
                if let offered = try hello.applicationProtocols(), !offered.contains(where: { supported.contains($0) }) {
                    let names = offered.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ", ")
                    return "the app offers only \(names)"
                }
                return nil
            } catch {
                return "\(error)"
            }
        }
        return "the ClientHello is incomplete"
    }

    /// A fixed key to try the app's share with: a share no key can use (the
    /// wrong length, a point of small order) fails with any.
    private static let probeKey = [UInt8](repeating: 0x5A, count: 32)
}
