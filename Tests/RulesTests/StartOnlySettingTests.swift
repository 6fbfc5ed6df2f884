import Foundation
import Testing
@testable import Rules

/// A reload says which changed settings it cannot apply (the capture, the
/// TUN, the listeners); it said nothing, and the old values stayed.
@Suite struct StartOnlySettingTests {
    static let before = """
    [General]
    mtu = 9000
    http-listen = 127.0.0.1:6152
    [Capture]
    pcap = /tmp/a.pcap
    filter = tcp port 80
    [Rule]
    FINAL,DIRECT
    """

    @Test func anUnchangedProfileSaysNothing() throws {
        let old = try loadProfile(Self.before).get()
        let new = try loadProfile(Self.before + "\n# a comment\n").get()
        #expect(new.reloadNotice(from: old, scope: StartOnlySetting.tunnel) == nil)
        #expect(new.reloadNotice(from: old, scope: StartOnlySetting.proxy) == nil)
    }

    @Test func eachCommandNamesWhatItCannotApply() throws {
        let old = try loadProfile(Self.before).get()
        let changed = Self.before
            .replacingOccurrences(of: "tcp port 80", with: "udp port 53")
            .replacingOccurrences(of: "mtu = 9000", with: "mtu = 1500")
            .replacingOccurrences(of: "6152", with: "6153")
        let new = try loadProfile(changed).get()
        let tunnel = try #require(new.reloadNotice(from: old, scope: StartOnlySetting.tunnel))
        #expect(tunnel.hasSuffix(": a reload does not apply [General] mtu, [Capture] filter: they are read only when Sluice starts"), "\(tunnel)")
        let proxy = try #require(new.reloadNotice(from: old, scope: StartOnlySetting.proxy))
        #expect(proxy.hasSuffix(": a reload does not apply [General] http-listen: it is read only when Sluice starts"), "\(proxy)")
        // Rules, hosts and the rest are applied: no notice for them.
        let rules = try loadProfile(Self.before.replacingOccurrences(of: "FINAL,DIRECT", with: "DOMAIN,a.test,REJECT\nFINAL,DIRECT")).get()
        #expect(rules.reloadNotice(from: old, scope: StartOnlySetting.tunnel) == nil)
    }
}
