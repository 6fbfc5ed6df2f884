internal import Crypto
internal import Sys

/// The wider SIMD paths this CPU can run, turned on once at start, before
/// any thread: ChaCha20 eight blocks at a time and Poly1305 four when the kernel lists AVX2
/// (docs/tls.md, "Speed"). A CPU without it keeps the baseline paths,
/// which give the same bytes.
public enum CPUAcceleration {
    public static func enable() {
        CryptoAcceleration.avx2 = CryptoAcceleration.usable(onCPUWithAVX2: CPUFeatures.current().avx2)
    }
}
