/// The nonce generator of deterministic ECDSA (RFC 6979 §3.2) with
/// HMAC-SHA-256: a stream of candidates k derived from the private key and the
/// message digest, so signing needs no randomness source and a repeated
/// (key, digest) pair repeats k instead of leaking the key through two
/// different signatures with a shared nonce.
struct DeterministicNonce<let limbCount: Int> {
    private var key: [UInt8]
    private var value: [UInt8]
    private let order: PrimeField<limbCount>
    private let byteCount: Int

    /// `privateKey` is int2octets(x) and `digestOctets` is bits2octets(h₁)
    /// (both `byteCount` bytes, RFC 6979 §2.3.3 and §2.3.4); steps b to g.
    init(privateKey: [UInt8], digestOctets: [UInt8], order: PrimeField<limbCount>, byteCount: Int) {
        self.order = order
        self.byteCount = byteCount
        value = [UInt8](repeating: 0x01, count: SHA256.digestSize)
        key = [UInt8](repeating: 0x00, count: SHA256.digestSize)
        key = HMAC<SHA256>.authenticationCode(key: key, message: value + [0x00] + privateKey + digestOctets)
        value = HMAC<SHA256>.authenticationCode(key: key, message: value)
        key = HMAC<SHA256>.authenticationCode(key: key, message: value + [0x01] + privateKey + digestOctets)
        value = HMAC<SHA256>.authenticationCode(key: key, message: value)
    }

    /// The next candidate in [1, n−1] (step h). A later call continues with
    /// the step h.3 update, for a caller whose k gave r = 0 or s = 0.
    mutating func next() -> Limbs<limbCount> {
        while true {
            var material: [UInt8] = []
            while material.count < byteCount {
                value = HMAC<SHA256>.authenticationCode(key: key, message: value)
                material += value
            }
            // bits2int: qlen is a whole number of bytes for P-256 and P-384,
            // so the leftmost qlen bits are the first byteCount bytes.
            let candidate: Limbs<limbCount>? = LimbEncoding.limbs(fromBigEndian: material.prefix(byteCount))
            // Advance the state now, so that the next call yields a fresh candidate.
            key = HMAC<SHA256>.authenticationCode(key: key, message: value + [0x00])
            value = HMAC<SHA256>.authenticationCode(key: key, message: value)
            if let candidate, PrimeField<limbCount>.isZeroMask(candidate) == 0, order.isReduced(candidate) {
                return candidate
            }
        }
    }
}
