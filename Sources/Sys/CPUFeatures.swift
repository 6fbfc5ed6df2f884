/// What the CPU offers beyond baseline x86-64, as the kernel reports it in
/// /proc/cpuinfo. The kernel lists a feature only when it can be used: it
/// leaves out AVX2 when the OS does not save the YMM registers (XSAVE off,
/// `clearcpuid=`), which CPUID alone would not say.
public struct CPUFeatures: Equatable, Sendable {
    /// 256-bit integer SIMD: Crypto's eight-block ChaCha20 (the CryptoAVX2 module) may run.
    public var avx2: Bool

    public init(avx2: Bool) { self.avx2 = avx2 }

    /// This machine's, or none when /proc cannot tell (then nothing beyond baseline runs).
    public static func current() -> CPUFeatures {
        // The first processor's block, flags included, is well inside the first 16 KiB.
        guard let bytes = Files.read("/proc/cpuinfo", limit: 16 * 1024) else { return CPUFeatures(avx2: false) }
        return parse(cpuinfo: String(decoding: bytes, as: UTF8.self))
    }

    /// The first `flags` line of a /proc/cpuinfo text (x86; other
    /// architectures name theirs differently and get no features here).
    public static func parse(cpuinfo: String) -> CPUFeatures {
        for line in cpuinfo.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingSpacesAndTabs() == "flags" else { continue }
            let flags = parts[1].split(whereSeparator: { $0 == " " || $0 == "\t" })
            return CPUFeatures(avx2: flags.contains("avx2"))
        }
        return CPUFeatures(avx2: false)
    }
}

private extension Substring {
    func trimmingSpacesAndTabs() -> Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }
}
