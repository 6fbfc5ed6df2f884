@testable import Sys
import Testing

@Suite struct CPUFeaturesTests {
    static let haswell = """
        processor\t: 0
        vendor_id\t: GenuineIntel
        model name\t: Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz
        flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sse sse2 ssse3 fma cx16 sse4_1 sse4_2 avx f16c avx2 bmi1 bmi2
        bugs\t\t: spectre_v1

        processor\t: 1
        flags\t\t: fpu sse sse2

        """

    @Test func avx2IsReadFromTheFirstFlagsLine() {
        #expect(CPUFeatures.parse(cpuinfo: Self.haswell) == CPUFeatures(avx2: true))
    }

    @Test func aFlagIsAWholeWord() {
        // avx512f, avx_vnni and the like are not avx2; nor is the word in another line.
        let text = "model name\t: not avx2\nflags\t\t: fpu sse2 avx avx512f avx_vnni avx2x\n"
        #expect(CPUFeatures.parse(cpuinfo: text) == CPUFeatures(avx2: false))
    }

    @Test func withoutFlagsNothingBeyondBaseline() {
        // arm64's /proc/cpuinfo says "Features", and an unreadable file says nothing.
        #expect(CPUFeatures.parse(cpuinfo: "processor\t: 0\nFeatures\t: fp asimd aes\n") == CPUFeatures(avx2: false))
        #expect(CPUFeatures.parse(cpuinfo: "") == CPUFeatures(avx2: false))
        #expect(CPUFeatures.parse(cpuinfo: "flags\t\t: avx2") == CPUFeatures(avx2: true))
    }

    @Test func thisMachineAgreesWithItsOwnFile() {
        // Whatever this CPU has, current() is parse() of /proc/cpuinfo.
        let current = CPUFeatures.current()
        if let bytes = Files.read("/proc/cpuinfo", limit: 16 * 1024) {
            #expect(current == CPUFeatures.parse(cpuinfo: String(decoding: bytes, as: UTF8.self)))
        }
    }
}
