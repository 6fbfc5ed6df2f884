import Testing
import Sys

@Suite struct CapabilitiesTests {
    @Test func theEffectiveSetIsReadFromProcStatus() throws {
        let status = "Name:\tsluice\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t0000000000201000\nCapBnd:\t000001ffffffffff\n"
        let parsed = try #require(Capabilities.parse(status: status))
        #expect(parsed.effective == 0x20_1000)
        #expect(parsed.missing([Capabilities.networkAdministration, Capabilities.systemAdministration]).isEmpty)
        #expect(Capabilities(effective: 1 << 12).missing([Capabilities.networkAdministration, Capabilities.systemAdministration]) == ["CAP_SYS_ADMIN"])
        #expect(Capabilities(effective: 0).missing([Capabilities.networkAdministration, Capabilities.systemAdministration])
            == ["CAP_NET_ADMIN", "CAP_SYS_ADMIN"])
        #expect(Capabilities.parse(status: "Name:\tx\n") == nil)
        #expect(Capabilities.parse(status: "CapEff:\tzz\n") == nil)
        // This process's own set is readable (its bits depend on who runs the tests).
        #expect(Capabilities.current() != nil)
    }
}
