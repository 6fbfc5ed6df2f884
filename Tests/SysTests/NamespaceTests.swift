import Foundation
import Glibc
import Sys
import Testing

/// Everything here builds its own namespace (sluice-sys-PID-TAG) with the
/// code under test, touches nothing outside it, and deletes it on every path.
@Suite(.enabled(if: isRoot, Comment(rawValue: needsRoot)))
struct NamespaceTests {
    private static let local4 = SysIPAddress.v4(0x0A4D_0001)   // 10.77.0.1
    private static let local6 = SysIPAddress.v6(high: 0xFD00_0077_0000_0000, low: 1)   // fd00:77::1

    /// TUN "sluice%d" with MTU 1500, up, 10.77.0.1/24 and fd00:77::1/64: all through our netlink code.
    private static func configuredTun(options: TunDevice.Options = []) throws -> TunDevice {
        let tun = try TunDevice(name: "sluice%d", options: options)
        var netlink = try RouteSocket()
        let index = try RouteSocket.interfaceIndex(named: tun.name)
        try netlink.setMTU(index: index, mtu: 1500)
        try netlink.setLink(index: index, up: true)
        try netlink.addAddress(local4, prefixLength: 24, index: index)
        try netlink.addAddress(local6, prefixLength: 64, index: index)
        return tun
    }

    @Test func createdNamespaceIsSeenByIpAndGoneAfterDelete() throws {
        let name = "sluice-sys-\(getpid())-life"
        try NetworkNamespace.create(named: name)
        var deleted = false
        defer { if !deleted { try? NetworkNamespace.delete(named: name) } }

        #expect(NetworkNamespace.exists(named: name))
        #expect(command(["ip", "netns", "list"]).output.contains(name))
        // A second create of the same name is refused, not silently merged.
        #expect(throws: Errno.fileExists) { try NetworkNamespace.create(named: name) }
        // It is a different namespace from ours, and ip sees the same one we made.
        let inside = try #require(namespaceInode(NetworkNamespace.path(named: name)))
        #expect(inside != namespaceInode("/proc/self/ns/net"))
        let ipSees = command(["ip", "netns", "exec", name, "readlink", "/proc/self/ns/net"]).output
        #expect(ipSees.contains("net:[\(inside)]"))

        try NetworkNamespace.delete(named: name)
        deleted = true
        #expect(!NetworkNamespace.exists(named: name))
        #expect(!command(["ip", "netns", "list"]).output.contains(name))
        #expect(throws: Errno.noSuchFileOrDirectory) { _ = try NetworkNamespace(named: name) }
        #expect(throws: Errno.noSuchFileOrDirectory) { try NetworkNamespace.delete(named: name) }
    }

    @Test func runUsesADedicatedThreadAndLeavesTheCallerAlone() throws {
        try withNamespace("run") { name in
            let target = try #require(namespaceInode(NetworkNamespace.path(named: name)))
            let before = try #require(namespaceInode("/proc/thread-self/ns/net"))
            let namespace = try NetworkNamespace(named: name)
            let (seenInside, threadInside) = try namespace.run {
                (namespaceInode("/proc/thread-self/ns/net"), pthread_self())
            }
            #expect(seenInside == target)
            #expect(threadInside != pthread_self())
            #expect(namespaceInode("/proc/thread-self/ns/net") == before)
            // Errors thrown inside come out unchanged.
            #expect(throws: Errno.timedOut) { try namespace.run { throw Errno.timedOut } }
        }
    }

    @Test func enterMovesOnlyTheCallingThreadAndOpenByPidWorks() throws {
        try withNamespace("enter-a") { a in
            try withNamespace("enter-b") { b in
                let inodeB = try #require(namespaceInode(NetworkNamespace.path(named: b)))
                let nsA = try NetworkNamespace(named: a)
                let nsB = try NetworkNamespace(named: b)
                let after: UInt64? = try nsA.run {
                    try nsB.enter()
                    return namespaceInode("/proc/thread-self/ns/net")
                }
                #expect(after == inodeB)
                // Open by pid: our own process's (main thread's) namespace.
                let ours = try NetworkNamespace(pid: getpid())
                let oursInode: UInt64? = try ours.run { namespaceInode("/proc/thread-self/ns/net") }
                #expect(oursInode == namespaceInode("/proc/self/ns/net"))
            }
        }
    }

    @Test func tunReceivesIPv4PingFromTheNamespace() throws {
        try withNamespace("ping4") { name in
            let namespace = try NetworkNamespace(named: name)
            var seen: [String] = []
            var tunName = ""
            let packet: [UInt8]? = try namespace.run {
                let tun = try Self.configuredTun()
                tunName = tun.name
                let ping = try launch(["ip", "netns", "exec", name, "ping", "-n", "-c", "1", "-W", "1", "10.77.0.2"])
                defer { ping.finish() }
                return try readPacket(from: tun, within: 5, seen: &seen) { p in
                    p.count >= 20 && p[0] >> 4 == 4 && p[9] == 1
                }
            }
            #expect(tunName == "sluice0")     // the kernel filled in "sluice%d"
            let bytes = try #require(packet, "no ICMP packet on the TUN; saw: \(seen)")
            let headerLength = Int(bytes[0] & 0x0F) * 4
            #expect(bytes[0] >> 4 == 4)
            #expect(headerLength >= 20)
            #expect(Int(bytes[2]) << 8 | Int(bytes[3]) == bytes.count)     // total length
            #expect(bytes[9] == 1)                                           // protocol ICMP
            #expect(Array(bytes[12..<16]) == [10, 77, 0, 1])                 // source
            #expect(Array(bytes[16..<20]) == [10, 77, 0, 2])                 // destination
            #expect(onesComplementSum(bytes[0..<headerLength]) == 0xFFFF)    // header checksum holds
            try #require(bytes.count >= headerLength + 8)
            #expect(bytes[headerLength] == 8)                                // echo request
            #expect(bytes[headerLength + 1] == 0)                            // code 0
            #expect(onesComplementSum(bytes[headerLength...]) == 0xFFFF)     // ICMP checksum holds
        }
    }

    @Test func tunReceivesIPv6PingFromTheNamespace() throws {
        try withNamespace("ping6") { name in
            let namespace = try NetworkNamespace(named: name)
            var seen: [String] = []
            let packet: [UInt8]? = try namespace.run {
                let tun = try Self.configuredTun()
                let ping = try launch(["ip", "netns", "exec", name, "ping", "-6", "-n", "-c", "1", "-W", "1", "fd00:77::2"])
                defer { ping.finish() }
                // Router solicitations (133) and MLD reports (behind a hop-by-hop header) are skipped.
                return try readPacket(from: tun, within: 5, seen: &seen) { p in
                    p.count >= 48 && p[0] >> 4 == 6 && p[6] == 58 && p[40] == 128
                }
            }
            let bytes = try #require(packet, "no ICMPv6 echo request on the TUN; saw: \(seen)")
            #expect(bytes[0] >> 4 == 6)
            #expect(Int(bytes[4]) << 8 | Int(bytes[5]) == bytes.count - 40)   // payload length
            #expect(bytes[6] == 58)                                            // next header ICMPv6
            let source: [UInt8] = [0xFD, 0, 0, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
            #expect(Array(bytes[8..<24]) == source)
            #expect(Array(bytes[24..<40]) == [0xFD, 0, 0, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2])
            #expect(bytes[40] == 128)                                          // echo request
            #expect(bytes[41] == 0)
        }
    }

    /// With a virtio_net_hdr, reads come without it, and a packet written
    /// with NEEDS_CSUM and only its pseudo-header's sum in the checksum field
    /// reaches a socket; the same bytes written without the flag are
    /// dropped for their bad checksum, so it was the flag that did it.
    @Test func virtioHeaderTunStripsReadsAndLetsTheKernelCompleteChecksums() throws {
        try withNamespace("vnet") { name in
            let namespace = try NetworkNamespace(named: name)
            var seen: [String] = []
            let (ping, received): ([UInt8]?, [String]) = try namespace.run {
                let tun = try Self.configuredTun(options: .virtioNetHeader)
                #expect(tun.virtioHeaderLength == VirtioNetHeader.length)
                let pinger = try launch(["ip", "netns", "exec", name, "ping", "-n", "-c", "1", "-W", "1", "10.77.0.2"])
                defer { pinger.finish() }
                let ping = try readPacket(from: tun, within: 5, seen: &seen) { p in
                    p.count >= 28 && p[0] >> 4 == 4 && p[9] == 1
                }

                // A UDP socket on the TUN's address, and datagrams to it "from" 10.77.0.2.
                let socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                defer { close(socket) }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(9000).bigEndian
                address.sin_addr.s_addr = UInt32(0x0A4D_0001).bigEndian
                let bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                #expect(bound == 0)
                func datagram(_ text: String, partial: Bool) -> (head: [UInt8], payload: [UInt8]) {
                    let payload = Array(text.utf8)
                    let udpLength = 8 + payload.count
                    var head: [UInt8] = [0x45, 0, 0, UInt8(20 + udpLength), 0, 1, 0, 0, 64, 17, 0, 0,
                                         10, 77, 0, 2, 10, 77, 0, 1,
                                         0x13, 0x88, 0x23, 0x28, 0, UInt8(udpLength), 0, 0]
                    let ipSum = ~onesComplementSum(head[0 ..< 20])
                    head[10] = UInt8(ipSum >> 8); head[11] = UInt8(ipSum & 0xff)
                    // The pseudo-header: addresses, protocol, UDP length.
                    let pseudo = onesComplementSum(ArraySlice(head[12 ..< 20] + [0, 17, 0, UInt8(udpLength)]))
                    // Partial: the pseudo-header's sum. Otherwise a wrong full checksum.
                    let field = partial ? pseudo : 0x1234
                    head[26] = UInt8(field >> 8); head[27] = UInt8(field & 0xff)
                    return (head, payload)
                }
                let good = datagram("completed by the kernel", partial: true)
                let bad = datagram("left with a bad checksum", partial: false)
                _ = try good.head.withUnsafeBytes { head in
                    try good.payload.withUnsafeBytes { payload in
                        try tun.writeCompletingChecksum(head, payload, checksumStart: 20, checksumOffset: 6)
                    }
                }
                _ = try bad.head.withUnsafeBytes { head in
                    try bad.payload.withUnsafeBytes { payload in try tun.write(head, payload) }
                }
                var received: [String] = []
                var buffer = [UInt8](repeating: 0, count: 256)
                let deadline = Date().addingTimeInterval(2)
                for _ in 0 ..< 400 where Date() < deadline {
                    let n = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                    if n > 0 { received.append(String(decoding: buffer[0 ..< n], as: UTF8.self)) } else { usleep(5000) }
                }
                return (ping, received)
            }
            let bytes = try #require(ping, "no ping on the TUN; saw: \(seen)")
            #expect(Int(bytes[2]) << 8 | Int(bytes[3]) == bytes.count)   // the IP header first, no virtio_net_hdr
            #expect(received == ["completed by the kernel"])
        }
    }

    @Test func withChecksumOffloadTheKernelLeavesUDPChecksumsToUsAndSaysSo() throws {
        try withNamespace("rxcsum") { name in
            let namespace = try NetworkNamespace(named: name)
            var seen: [String] = []
            // (vouched, the checksum verifies, the payload) for a datagram sent before and after TUN_F_CSUM.
            let results: [(Bool, Bool, String)] = try namespace.run {
                let tun = try Self.configuredTun(options: .virtioNetHeader)
                let socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
                defer { close(socket) }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(9).bigEndian
                address.sin_addr.s_addr = UInt32(0x0A4D_0002).bigEndian   // 10.77.0.2, through the TUN
                var results: [(Bool, Bool, String)] = []
                for (round, text) in ["summed by the app's kernel", "left to the reader"].enumerated() {
                    if round == 1 { try tun.setOffloads(.checksum) }
                    let sent = text.utf8CString.withUnsafeBytes { bytes in
                        withUnsafePointer(to: &address) {
                            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                                sendto(socket, bytes.baseAddress, text.utf8.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                            }
                        }
                    }
                    #expect(sent == text.utf8.count)
                    var vouched = false
                    let packet = try readPacket(from: tun, within: 5, seen: &seen, checksumVouchedFor: &vouched) { p in
                        p.count >= 28 && p[0] >> 4 == 4 && p[9] == 17 && p[22] == 0 && p[23] == 9
                    }
                    guard let packet else { return results }
                    let udpLength = packet.count - 20
                    let pseudo = ArraySlice(packet[12 ..< 20] + [0, 17, UInt8(udpLength >> 8), UInt8(udpLength & 0xff)])
                    var sum = UInt32(onesComplementSum(pseudo)) + UInt32(onesComplementSum(packet[20...]))
                    sum = (sum & 0xffff) + (sum >> 16)
                    results.append((vouched, sum == 0xffff, String(decoding: packet[28...], as: UTF8.self)))
                }
                return results
            }
            try #require(results.count == 2, "a datagram never reached the TUN; saw: \(seen)")
            // Without the offload: a complete checksum, nothing vouched for.
            #expect(results[0].0 == false && results[0].1 == true && results[0].2 == "summed by the app's kernel")
            // With it: NEEDS_CSUM, and the field holds only the pseudo-header's sum.
            #expect(results[1].0 == true && results[1].1 == false && results[1].2 == "left to the reader")
        }
    }

    @Test func readBatchDrainsQueuedPackets() throws {
        try withNamespace("batch") { name in
            let namespace = try NetworkNamespace(named: name)
            let (first, second, echoes): (Int, Int, Int) = try namespace.run {
                let tun = try Self.configuredTun()
                // Three echo requests, 50 ms apart; ping's own wait for replies lets them all queue.
                let ping = try launch(["ip", "netns", "exec", name, "ping", "-n", "-c", "3", "-i", "0.05", "-W", "1", "10.77.0.2"])
                ping.finish(within: 5)

                let pool = (0..<16).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8) }
                defer { pool.forEach { $0.deallocate() } }
                var lengths = [Int](repeating: -1, count: pool.count)
                let first = try pool.withUnsafeBufferPointer { buffers in
                    try lengths.withUnsafeMutableBufferPointer { try tun.readBatch(into: buffers, lengths: $0) }
                }
                var echoes = 0
                for i in 0..<first {
                    let p = pool[i]
                    if lengths[i] >= 28 && p[0] >> 4 == 4 && p[9] == 1 && p[20] == 8 { echoes += 1 }
                }
                let second = try pool.withUnsafeBufferPointer { buffers in
                    try lengths.withUnsafeMutableBufferPointer { try tun.readBatch(into: buffers, lengths: $0) }
                }
                return (first, second, echoes)
            }
            #expect(first >= 3)
            #expect(echoes == 3)
            #expect(second == 0)
        }
    }

    @Test func routesAndRulesAddedByNetlinkShowInIp() throws {
        try withNamespace("routes") { name in
            let namespace = try NetworkNamespace(named: name)
            // Only system work happens on the namespace thread (Swift Testing
            // cannot attribute expectations made there); checks come after.
            var seen: [String: String] = [:]
            var errors: [String: Errno?] = [:]
            let tunName: String = try namespace.run {
                let tun = try Self.configuredTun()
                var netlink = try RouteSocket()
                let index = try RouteSocket.interfaceIndex(named: tun.name)
                let onLink = SysRoute(destination: .v4(0x0A4E_0000), prefixLength: 16, outputInterface: index)
                let viaGateway = SysRoute(
                    destination: .v4(0x0A4F_0000), prefixLength: 16, gateway: .v4(0x0A4D_00FE), outputInterface: index)
                let v6 = SysRoute(destination: SysIPAddress("fd00:78::")!, prefixLength: 48, outputInterface: index)
                let defaultInTable = SysRoute.defaultRoute(.v4, outputInterface: index, table: 100)
                let default6InTable = SysRoute.defaultRoute(.v6, outputInterface: index, table: 100)
                let rule = SysRule(family: .v4, mark: 0x77, table: 100, priority: 1000)
                let rule6 = SysRule(family: .v6, mark: 0x77, mask: 0xFF, table: 100, priority: 1000)
                for route in [onLink, viaGateway, v6, defaultInTable, default6InTable] { try netlink.addRoute(route) }
                try netlink.addRule(rule)
                try netlink.addRule(rule6)
                // Destinations that skip table 100 (whole-host mode's --exclude), ahead of the mark rules:
                // looked up in main, where 10.78.0.0/16 has a route (a lookup that finds none goes on to the next rule).
                let excluded = SysRule(destination: .v4(0x0A4E_0000), length: 16, table: SysRule.mainTable, priority: 999)
                let excluded6 = SysRule(destination: SysIPAddress("fd00:79::")!, length: 32, table: SysRule.mainTable, priority: 999)
                try netlink.addRule(excluded)
                try netlink.addRule(excluded6)
                seen["excluded"] = command(["ip", "-n", name, "route", "get", "10.78.0.1", "mark", "0x77"]).output
                errors["bad rule"] = failure { () throws(Errno) in
                    try netlink.addRule(SysRule(destination: .v4(0xC000_0200), length: 33, table: SysRule.mainTable, priority: 998))
                }

                seen["main4"] = command(["ip", "-n", name, "route"]).output
                seen["main6"] = command(["ip", "-n", name, "-6", "route"]).output
                seen["table4"] = command(["ip", "-n", name, "route", "show", "table", "100"]).output
                seen["table6"] = command(["ip", "-n", name, "-6", "route", "show", "table", "100"]).output
                seen["rules4"] = command(["ip", "-n", name, "rule"]).output
                seen["rules6"] = command(["ip", "-n", name, "-6", "rule"]).output
                seen["marked"] = command(["ip", "-n", name, "route", "get", "192.0.2.1", "mark", "0x77"]).output

                errors["add twice"] = failure { () throws(Errno) in try netlink.addRoute(onLink) }
                try netlink.deleteRoute(onLink)
                try netlink.deleteRoute(viaGateway)
                try netlink.deleteRule(rule)
                seen["main4 after"] = command(["ip", "-n", name, "route"]).output
                seen["rules4 after"] = command(["ip", "-n", name, "rule"]).output
                errors["delete route twice"] = failure { () throws(Errno) in try netlink.deleteRoute(onLink) }
                errors["delete rule twice"] = failure { () throws(Errno) in try netlink.deleteRule(rule) }
                errors["replace"] = failure { () throws(Errno) in
                    try netlink.replaceRoute(v6)
                    try netlink.replaceRoute(v6)
                }
                return tun.name
            }
            let main4 = seen["main4", default: ""]
            #expect(main4.contains("10.78.0.0/16 dev \(tunName) proto static scope link"), "\(main4)")
            #expect(main4.contains("10.79.0.0/16 via 10.77.0.254 dev \(tunName) proto static"), "\(main4)")
            #expect(main4.contains("10.77.0.0/24 dev \(tunName) proto kernel"), "\(main4)")
            let main6 = seen["main6", default: ""]
            #expect(main6.contains("fd00:78::/48 dev \(tunName) proto static"), "\(main6)")
            let table4 = seen["table4", default: ""]
            #expect(table4.contains("default dev \(tunName) proto static"), "\(table4)")
            let table6 = seen["table6", default: ""]
            #expect(table6.contains("default dev \(tunName) proto static"), "\(table6)")
            let rules4 = seen["rules4", default: ""]
            #expect(rules4.contains("1000:\tfrom all fwmark 0x77 lookup 100"), "\(rules4)")
            let rules6 = seen["rules6", default: ""]
            #expect(rules6.contains("1000:\tfrom all fwmark 0x77/0xff lookup 100"), "\(rules6)")
            #expect(rules4.contains("999:\tfrom all to 10.78.0.0/16 lookup main"), "\(rules4)")
            #expect(rules6.contains("999:\tfrom all to fd00:79::/32 lookup main"), "\(rules6)")
            // An excluded destination is routed by main, marked or not.
            let excludedRoute = seen["excluded", default: ""]
            #expect(excludedRoute.contains("10.78.0.1 dev \(tunName)") && !excludedRoute.contains("table 100"), "\(excludedRoute)")
            #expect(errors["bad rule"] == .some(.invalidArgument))
            // The kernel itself routes marked traffic by our rule into table 100.
            let marked = seen["marked", default: ""]
            #expect(marked.contains("dev \(tunName)") && marked.contains("table 100"), "\(marked)")

            #expect(errors["add twice"] == .some(.fileExists))
            let after = seen["main4 after", default: ""]
            #expect(!after.contains("10.78.0.0/16"), "\(after)")
            #expect(!after.contains("10.79.0.0/16"), "\(after)")
            #expect(after.contains("10.77.0.0/24"), "\(after)")
            #expect(!seen["rules4 after", default: "fwmark 0x77"].contains("fwmark 0x77"))
            #expect(errors["delete route twice"] == .some(.noSuchProcess))
            #expect(errors["delete rule twice"] == .some(.noSuchFileOrDirectory))
            #expect(errors["replace"] == .some(nil))
        }
    }

    @Test func netlinkErrorsComeBackAsErrno() throws {
        try withNamespace("errors") { name in
            let namespace = try NetworkNamespace(named: name)
            var errors: [String: Errno?] = [:]
            var seen: [String: String] = [:]
            let tunName: String = try namespace.run {
                let tun = try Self.configuredTun()
                var netlink = try RouteSocket()
                let index = try RouteSocket.interfaceIndex(named: tun.name)
                errors["no such link"] = failure { () throws(Errno) in try netlink.setMTU(index: 0x7FFF_FF00, mtu: 1500) }
                errors["address twice"] = failure { () throws(Errno) in
                    try netlink.addAddress(Self.local4, prefixLength: 24, index: index)
                }
                errors["prefix 33"] = failure { () throws(Errno) in
                    try netlink.addAddress(Self.local4, prefixLength: 33, index: index)
                }
                errors["no such name"] = failure { () throws(Errno) in
                    _ = try RouteSocket.interfaceIndex(named: "nope-\(getpid())")
                }
                // The socket still works after errors: sequence numbers stay matched.
                try netlink.setMTU(index: index, mtu: 1400)
                seen["mtu"] = command(["ip", "-n", name, "link", "show", tun.name]).output
                try netlink.deleteAddress(Self.local4, prefixLength: 24, index: index)
                seen["addresses"] = command(["ip", "-n", name, "addr", "show", tun.name]).output
                // (Down last: it also flushes the IPv6 address.)
                try netlink.setLink(index: index, up: false)
                seen["down"] = command(["ip", "-n", name, "link", "show", tun.name]).output
                return tun.name
            }
            #expect(errors["no such link"] == .some(.noSuchDevice))
            #expect(errors["address twice"] == .some(.fileExists))
            #expect(errors["prefix 33"] == .some(.invalidArgument))
            #expect(errors["no such name"] == .some(.noSuchDevice))
            let mtu = seen["mtu", default: ""]
            #expect(mtu.contains("\(tunName): <") && mtu.contains("mtu 1400"), "\(mtu)")
            let down = seen["down", default: ""]
            #expect(down.contains("mtu 1400") && !down.contains(",UP"), "\(down)")
            let addresses = seen["addresses", default: ""]
            #expect(addresses.contains("fd00:77::1/64") && !addresses.contains("10.77.0.1"), "\(addresses)")
        }
    }

    @Test func tunOptionsAreAcceptedByTheKernel() throws {
        try withNamespace("tunopts") { name in
            let namespace = try NetworkNamespace(named: name)
            var errors: [String: Errno?] = [:]
            var names: [String] = []
            try namespace.run {
                errors["long name"] = failure { () throws(Errno) in _ = try TunDevice(name: String(repeating: "x", count: 16)) }
                errors["offload"] = failure { () throws(Errno) in
                    let tun = try TunDevice(name: "vnet%d", options: .virtioNetHeader)
                    names.append(tun.name)
                    try tun.setOffloads([.checksum, .tcpSegmentation4, .tcpSegmentation6])
                }
                errors["queues"] = failure { () throws(Errno) in
                    let first = try TunDevice(name: "mq%d", options: .multiQueue)
                    let second = try TunDevice(name: first.name, options: .multiQueue)
                    names += [first.name, second.name]
                    // A single-queue open of a multi-queue device is refused.
                    errors["mixed"] = failure { () throws(Errno) in _ = try TunDevice(name: first.name) }
                }
            }
            #expect(errors["long name"] == .some(.invalidArgument))
            #expect(errors["offload"] == .some(nil))
            #expect(errors["queues"] == .some(nil))
            #expect(errors["mixed"] == .some(.invalidArgument))
            #expect(names == ["vnet0", "mq0", "mq0"])
        }
    }

    @Test func socketMarkIsSetAndReadBack() throws {
        try withNamespace("mark") { name in
            let namespace = try NetworkNamespace(named: name)
            let mark: UInt32 = try namespace.run {
                let socket = FileDescriptor(rawValue: Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0))
                try socket.setMark(0x77)
                return try socket.mark
            }
            #expect(mark == 0x77)
        }
    }
}

/// The Errno `body` throws, or nil if it succeeds.
private func failure(_ body: () throws(Errno) -> Void) -> Errno? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

/// RFC 1071 sum over `bytes`; 0xFFFF when a checksum inside them is right.
private func onesComplementSum(_ bytes: ArraySlice<UInt8>) -> UInt16 {
    var sum: UInt32 = 0
    var index = bytes.startIndex
    while index + 1 < bytes.endIndex {
        sum += UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
        index += 2
    }
    if index < bytes.endIndex { sum += UInt32(bytes[index]) << 8 }
    while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
    return UInt16(sum)
}
