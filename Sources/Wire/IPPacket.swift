/// Either IP version, chosen by the version nibble: the one entry point for
/// a datagram read from a TUN device or a capture.
public enum IPNetworkView {
    case v4(IPv4View)
    case v6(IPv6View)
}

/// Where a fragment's data belongs, with both versions' fields widened to one shape.
public struct IPFragmentInfo: Equatable, Sendable, CustomStringConvertible {
    /// IPv4's 16-bit identification or IPv6's 32-bit one.
    public var identification: UInt32
    /// Where this fragment's data sits in the original payload, in bytes.
    public var byteOffset: Int
    public var moreFragments: Bool

    public init(identification: UInt32, byteOffset: Int, moreFragments: Bool) {
        self.identification = identification
        self.byteOffset = byteOffset
        self.moreFragments = moreFragments
    }

    /// `frag (id 4660, offset 1480+)`: the `+` says more fragments follow.
    public var description: String {
        "frag (id \(identification), offset \(byteOffset)" + (moreFragments ? "+" : "") + ")"
    }
}

/// A validated IPv4 or IPv6 datagram and where its upper layer starts.
public struct IPPacketView: CustomStringConvertible {
    public let network: IPNetworkView

    /// Set by whoever read the datagram when the sender's kernel vouches for
    /// its TCP or UDP checksum: a TUN's virtio_net_hdr said the checksum was
    /// left to be completed on the way out (the field then holds only the
    /// pseudo-header's sum) or was checked already. The bytes never crossed a
    /// wire, so `verifyUpperLayerChecksum` takes them without summing.
    public var upperLayerChecksumVouchedFor = false

    /// Reads the version nibble and validates the datagram as that version.
    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer) throws(WireError) {
        try require(1, in: bytes, .ipv4)
        switch bytes.u8(0) >> 4 {
        case 4: network = .v4(try IPv4View(bytes))
        case 6: network = .v6(try IPv6View(bytes))
        default: throw .unsupported(layer: .ipv4, reason: .version)
        }
    }

    /// As `init(_:)`, for the datagram an ICMP error quotes (see `IPv4View(quoted:)`).
    @inlinable
    public init(quoted bytes: UnsafeRawBufferPointer) throws(WireError) {
        try require(1, in: bytes, .ipv4)
        switch bytes.u8(0) >> 4 {
        case 4: network = .v4(try IPv4View(quoted: bytes))
        case 6: network = .v6(try IPv6View(quoted: bytes))
        default: throw .unsupported(layer: .ipv4, reason: .version)
        }
    }

    @inlinable public init(_ view: IPv4View) { network = .v4(view) }
    @inlinable public init(_ view: IPv6View) { network = .v6(view) }

    /// The datagram, cut at its length field.
    @inlinable
    public var bytes: UnsafeRawBufferPointer {
        switch network {
        case let .v4(v): return v.bytes
        case let .v6(v): return v.bytes
        }
    }

    @inlinable
    public var source: IPAddress {
        switch network {
        case let .v4(v): return .v4(v.source)
        case let .v6(v): return .v6(v.source)
        }
    }

    @inlinable
    public var destination: IPAddress {
        switch network {
        case let .v4(v): return .v4(v.destination)
        case let .v6(v): return .v6(v.destination)
        }
    }

    /// IPv4's protocol field, or the next header after IPv6's extension headers.
    @inlinable
    public var upperLayerProtocol: IPProtocol {
        switch network {
        case let .v4(v): return v.protocol
        case let .v6(v): return v.upperLayerProtocol
        }
    }

    /// The upper-layer bytes. For a fragment, only this fragment's share of them.
    @inlinable
    public var payload: UnsafeRawBufferPointer {
        switch network {
        case let .v4(v): return v.payload
        case let .v6(v): return v.upperLayerPayload
        }
    }

    /// Set for a real fragment; nil for a whole datagram (atomic IPv6 fragments included).
    @inlinable
    public var fragment: IPFragmentInfo? {
        switch network {
        case let .v4(v):
            guard v.isFragment else { return nil }
            return IPFragmentInfo(identification: UInt32(v.identification), byteOffset: v.fragmentByteOffset,
                                  moreFragments: v.moreFragments)
        case let .v6(v):
            guard let f = v.fragment, f.isFragment else { return nil }
            return IPFragmentInfo(identification: f.identification, byteOffset: f.fragmentByteOffset,
                                  moreFragments: f.moreFragments)
        }
    }

    @inlinable public var isFragment: Bool { fragment != nil }

    /// The pseudo-header sum for an upper layer of `length` bytes of `upperLayerProtocol`.
    @inlinable
    public func pseudoHeader(length: Int) -> InternetChecksum {
        switch network {
        case let .v4(v): return v.pseudoHeader(length: length)
        case let .v6(v): return v.pseudoHeader(protocol: v.upperLayerProtocol, length: length)
        }
    }

    /// Checks the UDP, TCP, ICMP or ICMPv6 checksum of a whole datagram; nil
    /// for a fragment (its checksum covers data it lacks) and for other protocols.
    /// A UDP length field that does not fit makes it false. TCP is summed
    /// directly, so a segment whose options TCPView would refuse still verifies.
    /// A TCP or UDP checksum vouched for (`upperLayerChecksumVouchedFor`) is
    /// not summed; ICMP's always is (no kernel offloads it).
    @inlinable
    public func verifyUpperLayerChecksum() -> Bool? {
        if isFragment { return nil }
        let proto = upperLayerProtocol
        if upperLayerChecksumVouchedFor {
            switch proto {
            case .tcp: return true
            case .udp: return (try? UDPView(payload)) != nil
            default: break
            }
        }
        switch network {
        case let .v4(v):
            switch proto {
            case .udp:
                guard let udp = try? UDPView(payload) else { return false }
                return udp.verifyChecksum(source: v.source, destination: v.destination)
            case .tcp:
                var c = v.pseudoHeader(length: payload.count)
                c.add(payload)
                return c.folded == 0xffff
            case .icmp:
                guard let icmp = try? ICMPv4View(payload) else { return false }
                return icmp.verifyChecksum()
            default:
                return nil
            }
        case let .v6(v):
            switch proto {
            case .udp:
                guard let udp = try? UDPView(payload) else { return false }
                return udp.verifyChecksum(source: v.source, destination: v.destination)
            case .tcp:
                var c = v.pseudoHeader(protocol: .tcp, length: payload.count)
                c.add(payload)
                return c.folded == 0xffff
            case .icmpv6:
                guard let icmp = try? ICMPv6View(payload) else { return false }
                return icmp.verifyChecksum(source: v.source, destination: v.destination)
            default:
                return nil
            }
        }
    }

    // MARK: tcpdump-style text

    /// One line per datagram, as tcpdump -S prints it without -v:
    /// `IP 10.0.0.1.40000 > 10.0.0.2.53: UDP, length 33`,
    /// `IP 10.0.0.1.40000 > 10.0.0.2.80: Flags [S], seq 1, win 64240, ..., length 0` (TCPView's text),
    /// `IP 10.0.0.1 > 10.0.0.2: ICMP echo request, id 7, seq 1, length 64`,
    /// `IP6 fd00::1 > fd00::2: frag (id 7, offset 1232+), UDP, length 1232`.
    public var description: String {
        let family: String
        switch network {
        case .v4: family = "IP"
        case .v6: family = "IP6"
        }
        let src = source.description, dst = destination.description
        let proto = upperLayerProtocol
        let data = payload
        if let fragment {
            return "\(family) \(src) > \(dst): \(fragment), \(proto), length \(data.count)"
        }
        switch (network, proto) {
        case (_, .udp):
            do {
                let udp = try UDPView(data)
                let prefix = "\(family) \(src).\(udp.sourcePort) > \(dst).\(udp.destinationPort):"
                // Like tcpdump, DNS on port 53 prints as DNS when it parses.
                if udp.sourcePort == 53 || udp.destinationPort == 53, let dns = try? DNSMessageView(udp.payload) {
                    return "\(prefix) \(dns)"
                }
                return "\(prefix) UDP, length \(udp.payload.count)"
            } catch {
                return "\(family) \(src) > \(dst): [\(error)]"
            }
        case (_, .tcp):
            do {
                let tcp = try TCPView(data)
                return "\(family) " + tcp.describe(source: src, destination: dst)
            } catch {
                return "\(family) \(src) > \(dst): [\(error)]"
            }
        case (.v4, .icmp):
            do {
                let icmp = try ICMPv4View(data)
                return "\(family) \(src) > \(dst): ICMP \(Self.describe(icmp)), length \(data.count)"
            } catch {
                return "\(family) \(src) > \(dst): [\(error)]"
            }
        case (.v6, .icmpv6):
            do {
                let icmp = try ICMPv6View(data)
                return "\(family) \(src) > \(dst): ICMP6, \(Self.describe(icmp)), length \(data.count)"
            } catch {
                return "\(family) \(src) > \(dst): [\(error)]"
            }
        case (.v6, .ipv6NoNext):
            return "\(family) \(src) > \(dst): no next header"
        default:
            return "\(family) \(src) > \(dst): \(proto), length \(data.count)"
        }
    }

    /// An ICMP error names what it refers to, as tcpdump does:
    /// `10.0.0.2 udp port 9 unreachable`.
    static func describe(_ icmp: ICMPv4View) -> String {
        let message = icmp.message
        guard message.isError, let quoted = try? IPPacketView(quoted: icmp.payload) else { return message.description }
        let target = quoted.destination.description
        switch message {
        case let .destinationUnreachable(code):
            switch code {
            case .network: return "net \(target) unreachable"
            case .host: return "host \(target) unreachable"
            case .protocol: return "\(target) protocol \(quoted.upperLayerProtocol.rawValue) unreachable"
            case .port:
                guard let port = quoted.quotedDestinationPort else { return "\(target) port unreachable" }
                return "\(target) \(quoted.upperLayerProtocol.lowercased) port \(port) unreachable"
            default: return "\(target) unreachable - \(code)"
            }
        case let .fragmentationNeeded(mtu): return "\(target) unreachable - need to frag (mtu \(mtu))"
        default: return message.description
        }
    }

    /// `destination unreachable, unreachable port, fd00::2 udp port 9`
    static func describe(_ icmp: ICMPv6View) -> String {
        let message = icmp.message
        guard case let .destinationUnreachable(code) = message,
              let quoted = try? IPPacketView(quoted: icmp.payload) else { return message.description }
        let target = quoted.destination.description
        if code == .port, let port = quoted.quotedDestinationPort {
            return "\(message), \(target) \(quoted.upperLayerProtocol.lowercased) port \(port)"
        }
        return "\(message), \(target)"
    }

    /// The destination port of a quoted TCP or UDP header, when the quote reaches it.
    var quotedDestinationPort: UInt16? {
        let proto = upperLayerProtocol
        guard proto == .udp || proto == .tcp, !isFragment || fragment?.byteOffset == 0, payload.count >= 4 else {
            return nil
        }
        return payload.u16(2)
    }
}

extension IPProtocol {
    /// tcpdump writes protocols in lower case inside ICMP error text.
    var lowercased: String {
        switch self {
        case .udp: return "udp"
        case .tcp: return "tcp"
        default: return description
        }
    }
}
