/// Which wider SIMD paths Crypto may take. The process that can ask the
/// kernel sets it once, before any cipher runs (the engine, from Sys's
/// `CPUFeatures`); everything else (the fuzz harnesses, other
/// architectures) keeps the baseline paths.
public enum CryptoAcceleration {
    /// ChaCha20 eight blocks at a time in AVX2 (the CryptoAVX2 module),
    /// instead of four in SSE2: about twice the keystream per cycle; and
    /// Poly1305 four blocks at a time, about 1.8 times as fast. Set it
    /// only when the CPU has AVX2: that module's instructions trap on one
    /// without. Set once, before threads start, and only read afterwards.
    nonisolated(unsafe) public static var avx2 = false

    /// Whether the AVX2 paths may run: the CPU has AVX2 (the caller asked
    /// the kernel) and this build has them. What `avx2` is set to, and what
    /// the tests of those paths are enabled by.
    public static func usable(onCPUWithAVX2 cpuHasAVX2: Bool) -> Bool {
        avx2Built && cpuHasAVX2
    }

    /// This build has the AVX2 paths (x86-64, built by the package).
    static var avx2Built: Bool {
        #if canImport(CryptoAVX2) && arch(x86_64)
        return true
        #else
        return false
        #endif
    }
}
