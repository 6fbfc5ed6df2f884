// fuzz-sources: Sources/Crypto Sources/TLS
// fuzz-corpus: tls
// libFuzzer harness for the bytes an app sends Sluice's TLS server: record
// framing, handshake reassembly, every message reader, and the server's
// state machine with a fixed certificate and a deterministic random source.
// Whatever the bytes: no trap, and the outcome (output, or the alert) is the
// same whether they arrive at once or cut in two at the point the first
// byte chooses.

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

private func run(_ pieces: [[UInt8]]) -> String {
    var tls = server()
    var out: [UInt8] = []
    for piece in pieces {
        do {
            let output = try tls.receive(piece)
            out += output.toPeer + output.applicationData
        } catch {
            return "alert \(error.alert) after \(out.count) bytes"
        }
    }
    return "\(out) \(tls.state)"
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTLS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard !bytes.isEmpty else { return 0 }
    let cut = Int(bytes[0]) * bytes.count / 256
    let whole = run([bytes])
    let split = run([Array(bytes[..<cut]), Array(bytes[cut...])])
    precondition(whole == split, "the outcome depends on how the bytes arrived: \(whole) / \(split)")

    // The message readers on the raw bytes, as a body.
    if let hello = try? ClientHello(body: bytes) {
        _ = try? hello.keyShares(); _ = try? hello.serverName(); _ = try? hello.applicationProtocols()
        _ = try? hello.supportedVersions(); _ = try? hello.signatureAlgorithms(); _ = try? hello.supportedGroups()
    }
    if let hello = try? ServerHello(body: bytes) { _ = try? hello.keyShare(); _ = try? hello.selectedGroup() }
    _ = try? EncryptedExtensions(body: bytes).selectedApplicationProtocol()
    _ = try? CertificateMessage(body: bytes)
    _ = try? CertificateVerify(body: bytes)
    return 0
}
