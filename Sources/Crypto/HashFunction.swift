/// What HMAC, HKDF, RFC 6979 nonces and TLS transcripts need of a hash: its
/// sizes and a one-shot digest. The hashes here are enums with static members
/// (there is no state to carry between calls), so callers name the hash as a
/// type parameter, `HMAC<SHA256>`, and nothing is dispatched per byte.
package protocol HashFunction {
    /// Bytes in a digest.
    static var digestSize: Int { get }
    /// Bytes in a compression block (HMAC pads its key to this, RFC 2104 §2).
    static var blockSize: Int { get }
    static func hash(_ bytes: [UInt8]) -> [UInt8]
}
