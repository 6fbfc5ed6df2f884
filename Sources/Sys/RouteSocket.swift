// RouteSocket exists so Sluice configures its TUN, addresses, routes and
// policy rules by talking rtnetlink to the kernel directly, never by
// running `ip`: each call builds one request in a buffer reused for the
// socket's lifetime, sends it with NLM_F_ACK and turns the kernel's
// NLMSG_ERROR answer into success or a typed Errno.
import CShim
import Glibc

public struct RouteSocket: ~Copyable {
    public let descriptor: FileDescriptor
    private let buffer: UnsafeMutableRawBufferPointer
    private var sequence: UInt32

    private static let bufferSize = 16 * 1024

    /// A NETLINK_ROUTE socket bound to a kernel-assigned port, in the
    /// calling thread's network namespace. Replies that take longer than
    /// `timeoutSeconds` fail with ETIMEDOUT rather than hang the caller.
    public init(timeoutSeconds: Int = 5) throws(Errno) {
        let raw = try valueOrErrno {
            socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_ROUTE)
        }.get()
        let fd = FileDescriptor(rawValue: raw)
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(AF_NETLINK)
        _ = try valueOrErrno {
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(raw, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
        }.get()
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        _ = try valueOrErrno {
            setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }.get()
        descriptor = fd
        buffer = .allocate(byteCount: Self.bufferSize, alignment: 8)
        // Distinct starting points keep replies to different sockets apart in traces.
        sequence = UInt32(truncatingIfNeeded: time(nil))
    }

    deinit {
        buffer.deallocate()
    }

    /// if_nametoindex(3): the index every other call here takes.
    public static func interfaceIndex(named name: String) throws(Errno) -> UInt32 {
        let index = if_nametoindex(name)
        if index == 0 { throw Errno.current }
        return index
    }

    // MARK: Links

    /// Sets or clears IFF_UP (RTM_NEWLINK with ifi_change limited to IFF_UP).
    public mutating func setLink(index: UInt32, up: Bool) throws(Errno) {
        try perform(type: Int(RTM_NEWLINK), flags: 0) { (message) throws(Errno) in
            var header = ifinfomsg()
            header.ifi_family = UInt8(AF_UNSPEC)
            header.ifi_index = Int32(bitPattern: index)
            header.ifi_flags = up ? UInt32(IFF_UP) : 0
            header.ifi_change = UInt32(IFF_UP)
            try message.appendHeader(header)
        }
    }

    /// IFLA_MTU.
    public mutating func setMTU(index: UInt32, mtu: UInt32) throws(Errno) {
        try perform(type: Int(RTM_NEWLINK), flags: 0) { (message) throws(Errno) in
            var header = ifinfomsg()
            header.ifi_family = UInt8(AF_UNSPEC)
            header.ifi_index = Int32(bitPattern: index)
            try message.appendHeader(header)
            try message.appendAttribute(type: Int(IFLA_MTU), u32: mtu)
        }
    }

    /// IFLA_TXQLEN: how many packets the kernel queues towards the device
    /// (for a TUN, towards Sluice) before it drops.
    public mutating func setTransmitQueueLength(index: UInt32, length: UInt32) throws(Errno) {
        try perform(type: Int(RTM_NEWLINK), flags: 0) { (message) throws(Errno) in
            var header = ifinfomsg()
            header.ifi_family = UInt8(AF_UNSPEC)
            header.ifi_index = Int32(bitPattern: index)
            try message.appendHeader(header)
            try message.appendAttribute(type: Int(IFLA_TXQLEN), u32: length)
        }
    }

    // MARK: Addresses

    /// Assigns `address/prefixLength` to interface `index`. IPv6 addresses
    /// get IFA_F_NODAD so they are usable at once, not tentative for a DAD
    /// round that a TUN has nobody to answer anyway.
    public mutating func addAddress(_ address: SysIPAddress, prefixLength: UInt8, index: UInt32) throws(Errno) {
        try changeAddress(type: Int(RTM_NEWADDR), flags: NLM_F_CREATE | NLM_F_EXCL, address, prefixLength, index)
    }

    public mutating func deleteAddress(_ address: SysIPAddress, prefixLength: UInt8, index: UInt32) throws(Errno) {
        try changeAddress(type: Int(RTM_DELADDR), flags: 0, address, prefixLength, index)
    }

    private mutating func changeAddress(
        type: Int, flags: Int32, _ address: SysIPAddress, _ prefixLength: UInt8, _ index: UInt32
    ) throws(Errno) {
        guard prefixLength <= address.family.bitCount else { throw Errno.invalidArgument }
        let addressFlags: UInt32 = address.family == .v6 ? UInt32(IFA_F_NODAD) : 0
        try perform(type: type, flags: flags) { (message) throws(Errno) in
            var header = ifaddrmsg()
            header.ifa_family = address.family.addressFamily
            header.ifa_prefixlen = prefixLength
            header.ifa_flags = UInt8(truncatingIfNeeded: addressFlags)
            header.ifa_scope = UInt8(RT_SCOPE_UNIVERSE.rawValue)
            header.ifa_index = index
            try message.appendHeader(header)
            // IFA_LOCAL is the interface's own address; IFA_ADDRESS the peer,
            // which on a non-point-to-point setup is the same address.
            try message.appendAttribute(type: Int(IFA_LOCAL), address: address)
            try message.appendAttribute(type: Int(IFA_ADDRESS), address: address)
            if addressFlags != 0 {
                try message.appendAttribute(type: Int(IFA_FLAGS), u32: addressFlags)
            }
        }
    }

    // MARK: Routes

    /// RTM_NEWROUTE; fails with EEXIST if the same route is already there.
    public mutating func addRoute(_ route: SysRoute) throws(Errno) {
        try changeRoute(type: Int(RTM_NEWROUTE), flags: NLM_F_CREATE | NLM_F_EXCL, route)
    }

    /// RTM_NEWROUTE with NLM_F_REPLACE: adds, or overwrites a route to the same destination.
    public mutating func replaceRoute(_ route: SysRoute) throws(Errno) {
        try changeRoute(type: Int(RTM_NEWROUTE), flags: NLM_F_CREATE | NLM_F_REPLACE, route)
    }

    /// RTM_DELROUTE; fields left nil match any value, as with `ip route del`.
    public mutating func deleteRoute(_ route: SysRoute) throws(Errno) {
        try changeRoute(type: Int(RTM_DELROUTE), flags: 0, route)
    }

    private mutating func changeRoute(type: Int, flags: Int32, _ route: SysRoute) throws(Errno) {
        let family = route.destination.family
        guard route.prefixLength <= family.bitCount else { throw Errno.invalidArgument }
        if let gateway = route.gateway, gateway.family != family { throw Errno.invalidArgument }
        let adding = type == Int(RTM_NEWROUTE)
        try perform(type: type, flags: flags) { (message) throws(Errno) in
            var header = rtmsg()
            header.rtm_family = family.addressFamily
            header.rtm_dst_len = route.prefixLength
            header.rtm_table = Self.shortTable(route.table)
            if adding {
                header.rtm_protocol = UInt8(RTPROT_STATIC)
                // Without a gateway the destination is on the link itself.
                let onLink = route.gateway == nil && family == .v4
                header.rtm_scope = UInt8(onLink ? RT_SCOPE_LINK.rawValue : RT_SCOPE_UNIVERSE.rawValue)
                header.rtm_type = UInt8(RTN_UNICAST)
            } else {
                // NOWHERE and UNSPEC match a route of any scope, protocol and type.
                header.rtm_scope = UInt8(RT_SCOPE_NOWHERE.rawValue)
            }
            try message.appendHeader(header)
            if route.prefixLength > 0 {
                try message.appendAttribute(type: Int(RTA_DST.rawValue), address: route.destination)
            }
            if let gateway = route.gateway {
                try message.appendAttribute(type: Int(RTA_GATEWAY.rawValue), address: gateway)
            }
            if let outputInterface = route.outputInterface {
                try message.appendAttribute(type: Int(RTA_OIF.rawValue), u32: outputInterface)
            }
            try message.appendAttribute(type: Int(RTA_TABLE.rawValue), u32: route.table)
            if let metric = route.metric {
                try message.appendAttribute(type: Int(RTA_PRIORITY.rawValue), u32: metric)
            }
        }
    }

    // MARK: Rules

    /// RTM_NEWRULE: `ip rule add [to PREFIX] [fwmark M[/K]] lookup T priority P`.
    public mutating func addRule(_ rule: SysRule) throws(Errno) {
        try changeRule(type: Int(RTM_NEWRULE), flags: NLM_F_CREATE | NLM_F_EXCL, rule)
    }

    public mutating func deleteRule(_ rule: SysRule) throws(Errno) {
        try changeRule(type: Int(RTM_DELRULE), flags: 0, rule)
    }

    private mutating func changeRule(type: Int, flags: Int32, _ rule: SysRule) throws(Errno) {
        try perform(type: type, flags: flags) { (message) throws(Errno) in
            var header = fib_rule_hdr()
            header.family = rule.family.addressFamily
            header.table = Self.shortTable(rule.table)
            header.action = UInt8(FR_ACT_TO_TBL)
            if let destination = rule.destination {
                guard destination.family == rule.family, rule.destinationLength <= destination.family.bitCount else { throw Errno.invalidArgument }
                header.dst_len = rule.destinationLength
            }
            try message.appendHeader(header)
            if let destination = rule.destination {
                try message.appendAttribute(type: Int(FRA_DST), address: destination)
            }
            if let mark = rule.mark {
                try message.appendAttribute(type: Int(FRA_FWMARK), u32: mark)
                if let mask = rule.mask {
                    try message.appendAttribute(type: Int(FRA_FWMASK), u32: mask)
                }
            }
            try message.appendAttribute(type: Int(FRA_PRIORITY), u32: rule.priority)
            try message.appendAttribute(type: Int(FRA_TABLE), u32: rule.table)
        }
    }

    // MARK: Request and acknowledgment

    /// The 8-bit table field holds tables below 256; larger ones go only in
    /// the 32-bit attribute, with the field left RT_TABLE_UNSPEC.
    private static func shortTable(_ table: UInt32) -> UInt8 {
        table < 256 ? UInt8(table) : UInt8(RT_TABLE_UNSPEC.rawValue)
    }

    private mutating func perform(
        type: Int,
        flags: Int32,
        _ build: (inout NetlinkMessage) throws(Errno) -> Void
    ) throws(Errno) {
        sequence &+= 1
        let sequence = self.sequence
        var message = try NetlinkMessage(
            in: buffer, type: type, flags: NLM_F_REQUEST | NLM_F_ACK | flags, sequence: sequence)
        try build(&message)
        let request = message.finish()
        let sent = try valueOrErrno { send(descriptor.rawValue, request.baseAddress, request.count, 0) }
        guard case .value(let count) = sent, count == request.count else { throw Errno.noBufferSpace }
        try awaitAcknowledgment(sequence)
    }

    /// Reads until the NLMSG_ERROR for `sequence` arrives; bounded so a
    /// socket flooded with other traffic cannot keep the caller forever.
    private func awaitAcknowledgment(_ sequence: UInt32) throws(Errno) {
        for _ in 0..<64 {
            let received = try valueOrErrno { recv(descriptor.rawValue, buffer.baseAddress, buffer.count, 0) }
            guard case .value(let count) = received else { throw Errno.timedOut }
            let datagram = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            switch NetlinkReply.scan(datagram, sequence: sequence) {
            case .acknowledged: return
            case .failed(let errno): throw errno
            case .unrelated: continue
            }
        }
        throw Errno.timedOut
    }
}
