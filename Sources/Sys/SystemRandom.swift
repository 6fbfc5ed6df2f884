internal import CShim
internal import Glibc

/// The kernel's random numbers (getrandom(2)): keys, certificate serial
/// numbers and TLS randoms. The pure layers take randomness as a closure,
/// so tests can give them fixed bytes; this is what the engine gives them.
public enum SystemRandom {
    /// `count` random bytes. getrandom on the urandom pool blocks only until
    /// the pool is first seeded at boot, and never fails short for requests
    /// of 256 bytes or less; larger ones are read in a loop.
    public static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        bytes.withUnsafeMutableBytes { buffer in
            while filled < count {
                let n = cshim_getrandom(buffer.baseAddress! + filled, UInt(count - filled))
                if n < 0 {
                    if errno == EINTR { continue }
                    // Without randomness no key may be made: stopping is the only safe answer.
                    fatalError("getrandom: \(Errno.current)")
                }
                filled += Int(n)
            }
        }
        return bytes
    }
}
