// PcapLinkType exists because `sluice replay` must take captures from tcpdump
// (Ethernet, Linux cooked), from BSD loopback and from Sluice itself (raw IP),
// and everything above it wants one thing: the IP datagram. Each link type
// knows where that datagram starts in a frame, or that the frame carries none
// (ARP, LLDP, anything not IPv4/IPv6), which the reader then skips.
internal import CShim
internal import Wire

public enum PcapLinkType: Sendable, Equatable, CustomStringConvertible {
    /// LINKTYPE_RAW (101 in files; DLT_RAW is 12, or 14 on BSD/OS): the frame is the datagram.
    case raw
    /// LINKTYPE_IPV4 (228) and LINKTYPE_IPV6 (229): raw IP of one version.
    case ipv4, ipv6
    /// LINKTYPE_ETHERNET (1): 14-byte header, then any 802.1Q/802.1ad tags.
    case ethernet
    /// LINKTYPE_LINUX_SLL (113): tcpdump -i any before libpcap 1.10, 16-byte header.
    case linuxCooked
    /// LINKTYPE_LINUX_SLL2 (276): tcpdump -i any since libpcap 1.10, 20-byte header.
    case linuxCooked2
    /// LINKTYPE_NULL (0): 4-byte address family in the capturing host's byte order.
    case null
    /// LINKTYPE_LOOP (108): the same, in network byte order (OpenBSD).
    case loop

    /// From the DLT value libpcap reports for an open capture.
    public init?(dlt: Int32) {
        switch dlt {
        case 12, 14, 101: self = .raw
        case 228: self = .ipv4
        case 229: self = .ipv6
        case 1: self = .ethernet
        case 113: self = .linuxCooked
        case 276: self = .linuxCooked2
        case 0: self = .null
        case 108: self = .loop
        default: return nil
        }
    }

    /// The DLT value to hand libpcap when writing this link type. libpcap maps
    /// DLT_RAW to LINKTYPE_RAW (101) in the file header.
    public var dlt: Int32 {
        switch self {
        case .raw: return DLT_RAW
        case .ipv4: return 228
        case .ipv6: return 229
        case .ethernet: return 1
        case .linuxCooked: return 113
        case .linuxCooked2: return 276
        case .null: return 0
        case .loop: return 108
        }
    }

    public var description: String {
        switch self {
        case .raw: return "RAW"
        case .ipv4: return "IPV4"
        case .ipv6: return "IPV6"
        case .ethernet: return "EN10MB"
        case .linuxCooked: return "LINUX_SLL"
        case .linuxCooked2: return "LINUX_SLL2"
        case .null: return "NULL"
        case .loop: return "LOOP"
        }
    }

    /// Where the IPv4 or IPv6 datagram starts in `frame`, or nil when the frame
    /// carries something else or is too short to tell. Bounded: at most
    /// `maximumVLANTags` stacked tags are looked through.
    public func datagramOffset(in frame: UnsafeRawBufferPointer) -> Int? {
        let offset: Int
        switch self {
        case .raw, .ipv4, .ipv6:
            offset = 0
        case .null, .loop:
            // The address family's value for IPv6 differs between BSDs (24, 28, 30),
            // so the IP version nibble decides, not the family field.
            offset = 4
        case .ethernet:
            guard frame.count >= 14 else { return nil }
            var typeOffset = 12
            var tags = 0
            while Self.isVLANTag(frame.u16(typeOffset)) {
                tags += 1
                guard tags <= Self.maximumVLANTags, frame.count >= typeOffset + 6 else { return nil }
                typeOffset += 4
            }
            guard Self.isIP(etherType: frame.u16(typeOffset)) else { return nil }
            offset = typeOffset + 2
        case .linuxCooked:
            guard frame.count >= 16, Self.isIP(etherType: frame.u16(14)) else { return nil }
            offset = 16
        case .linuxCooked2:
            guard frame.count >= 20, Self.isIP(etherType: frame.u16(0)) else { return nil }
            offset = 20
        }
        guard frame.count > offset else { return nil }
        let version = frame.u8(offset) >> 4
        switch self {
        case .ipv4: return version == 4 ? offset : nil
        case .ipv6: return version == 6 ? offset : nil
        case .raw, .null, .loop, .ethernet, .linuxCooked, .linuxCooked2:
            return version == 4 || version == 6 ? offset : nil
        }
    }

    static let maximumVLANTags = 4

    private static func isVLANTag(_ etherType: UInt16) -> Bool {
        etherType == 0x8100 || etherType == 0x88A8 || etherType == 0x9100
    }

    private static func isIP(etherType: UInt16) -> Bool {
        etherType == 0x0800 || etherType == 0x86DD
    }
}
