// fuzz-sources: Sources/Crypto Sources/TLS
// fuzz-corpus: tls
// libFuzzer harness for the bytes a peer sends Sluice's TLS: record framing,
// handshake reassembly, every message reader, and both state machines with
// deterministic randomness: the server (what an app sends) with a fixed
// certificate, and the client (what a server sends back, TLS 1.3 or 1.2)
// with a chain check that accepts any chain, so the fuzzer reaches what
// follows it. The first
// byte's low bit picks the side. Whatever the bytes: no trap, and the
// outcome (output, or the alert) is the same whether they arrive at once or
// cut in two at the point the first byte chooses.

private let leafKey = P256.PrivateKey(rawScalar: [UInt8](repeating: 0x11, count: 32))!

private func server() -> TLSServer {
    var counter: UInt8 = 0
    return TLSServer(configuration: TLSServer.Configuration(
        certificate: { _ in ([[0x30, 0x03, 0x02, 0x01, 0x01]], leafKey) },
        applicationProtocols: [Array("http/1.1".utf8)],
        randomBytes: { count in
            (0 ..< count).map { _ in counter &+= 1; return counter }
        }))
}

private func client() -> TLSClient {
    var counter: UInt8 = 0
    return TLSClient(configuration: TLSClient.Configuration(
        serverName: "fuzz.sluice.test", applicationProtocols: [Array("http/1.1".utf8)],
        randomBytes: { count in
            (0 ..< count).map { _ in counter &+= 1; return counter }
        },
        verifyChain: { (_: [[UInt8]]) throws(TLSError) -> ServerPublicKey in .p256(leafKey.publicKey) }))
}

private func run(_ pieces: [[UInt8]], asClient: Bool) -> String {
    var server = server()
    var client = client()
    var out: [UInt8] = asClient ? client.start() : []
    for piece in pieces {
        do {
            let output = asClient ? try client.receive(piece) : try server.receive(piece)
            out += output.toPeer + output.applicationData
        } catch {
            return "alert \(error.alert) after \(out.count) bytes"
        }
    }
    return "\(out) \(asClient ? client.state : server.state)"
}

/// `bytes` when they are whole handshake records holding exactly one
/// handshake message (the check reads no further than the hello, the
/// server reads everything).
private func onlyAHello(_ bytes: [UInt8]) -> [UInt8]? {
    var offset = 0
    var body: [UInt8] = []
    while offset + 5 <= bytes.count {
        guard bytes[offset] == 22 else { return nil }
        let length = Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
        guard offset + 5 + length <= bytes.count else { return nil }
        body += bytes[offset + 5 ..< offset + 5 + length]
        offset += 5 + length
    }
    guard offset == bytes.count, body.count >= 4 else { return nil }
    let messageLength = Int(body[1]) << 16 | Int(body[2]) << 8 | Int(body[3])
    return body.count == 4 + messageLength ? bytes : nil
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTLS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard !bytes.isEmpty else { return 0 }
    let cut = Int(bytes[0]) * bytes.count / 256
    let asClient = bytes[0] & 1 == 1
    let whole = run([bytes], asClient: asClient)
    let split = run([Array(bytes[..<cut]), Array(bytes[cut...])], asClient: asClient)
    precondition(whole == split, "the outcome depends on how the bytes arrived: \(whole) / \(split)")

    // The engine's look at an app's hello before it decides to intercept:
    // the same bytes, read without the server. When it finds no obstacle in
    // bytes that are a hello and nothing more, the server answers them.
    let obstacle = InterceptionCheck.obstacle(inFirstRecords: bytes, protocols: [Array("http/1.1".utf8)])
    if obstacle == nil, !asClient, let hello = onlyAHello(bytes) {
        var fresh = server()
        do { _ = try fresh.receive(hello) } catch {
            preconditionFailure("the check passed a hello the server refuses: \(error)")
        }
    }

    // The message readers on the raw bytes, as a body.
    if let hello = try? ClientHello(body: bytes) {
        _ = try? hello.keyShares(); _ = try? hello.serverName(); _ = try? hello.applicationProtocols()
        _ = try? hello.supportedVersions(); _ = try? hello.signatureAlgorithms(); _ = try? hello.supportedGroups()
    }
    if let hello = try? ServerHello(body: bytes) { _ = try? hello.keyShare(); _ = try? hello.selectedGroup() }
    _ = try? EncryptedExtensions(body: bytes).selectedApplicationProtocol()
    _ = try? CertificateMessage(body: bytes)
    _ = try? CertificateVerify(body: bytes)
    // TLS 1.2's, which the client reads from a server that chose 1.2.
    _ = try? TLS12Certificate(body: bytes)
    if let exchange = try? ServerKeyExchange(body: bytes) { _ = exchange.signedContent(clientRandom: [], serverRandom: []) }
    _ = try? TLS12CertificateRequest(body: bytes)
    return 0
}
