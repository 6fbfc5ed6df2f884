// fuzz-sources: Sources/Crypto Sources/X509
// fuzz-corpus: x509
// libFuzzer harness for everything that reads DER or PEM from outside:
// certificates (as a server's chain brings them), PEM bundles, private key
// files, RSA keys and ECDSA signatures. Whatever the bytes: no trap; what
// parses as strict DER encodes back to the same bytes; and a chain of the
// input as leaf and issuer goes through the verifier without trapping.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzX509(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let certificate = try? Certificate(derRepresentation: bytes) {
        precondition(certificate.derRepresentation == bytes, "a certificate kept other bytes than it read")
        _ = certificate.matches(host: "www.sluice.test")
        _ = certificate.subject.description
        _ = certificate.extensions.dnsNames
        let store = TrustStore(certificates: [certificate])
        _ = try? ChainVerifier.verify(chain: [bytes, bytes], host: "www.sluice.test", now: 1_796_400_000, trustStore: store)
    }
    if let signature = ECDSASignature(derRepresentation: bytes) {
        precondition(signature.derRepresentation == bytes, "an ECDSA signature is not strict DER")
    }
    _ = RSAPublicKey(pkcs1DERRepresentation: bytes)
    if let key = ECPrivateKeyDER.decode(bytes) {
        precondition(ECPrivateKeyDER.decode(ECPrivateKeyDER.encode(key))?.rawScalar == key.rawScalar, "a key does not round-trip")
    }
    _ = try? PEM.decodeAll(String(decoding: bytes, as: UTF8.self))
    return 0
}
