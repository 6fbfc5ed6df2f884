import Testing
@testable import Engine

/// A capture option with no capture to apply to is refused (exit 2), not
/// silently ignored: `--pcap-filter 'port 53'` alone captured nothing.
@Suite struct CaptureOptionsTests {
    @Test func optionsWithoutTheirCaptureAreRefused() throws {
        var nothing = CaptureOptions()
        #expect(try nothing.recorder(profile: nil) == nil)
        #expect(try nothing.harRecorder(profile: nil) == nil)
        for (option, set) in [("--pcap-filter", { (c: inout CaptureOptions) in c.filter = "udp port 53" }),
                              ("--snaplen", { $0.snaplen = 128 }), ("--pcap-rotate-size", { $0.rotateSize = 1 << 20 }),
                              ("--pcap-rotate-count", { $0.rotateCount = 3 })] {
            var options = CaptureOptions()
            set(&options)
            do {
                _ = try options.recorder(profile: nil)
                Issue.record("\(option) alone was accepted")
            } catch {
                #expect(error.isUsage && "\(error)".contains("\(option) has no capture to apply to: add --pcap FILE"), "\(error)")
            }
        }
        nothing.harBodyLimit = 4096
        do {
            _ = try nothing.harRecorder(profile: nil)
            Issue.record("--har-body-limit alone was accepted")
        } catch {
            #expect(error.isUsage && "\(error)".contains("--har-body-limit has no HAR to apply to"), "\(error)")
        }
    }
}
