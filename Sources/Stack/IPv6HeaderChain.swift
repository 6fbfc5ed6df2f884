import Wire

/// Walks the extension headers of an IPv6 datagram that `IPv6View` has
/// already validated, for the two jobs that need more than the view keeps:
/// finding the next-header field that names the fragment header (reassembly
/// rewrites it) and finding where the unfragmentable part ends (fragmenting).
/// Every read is bounds-checked again, so a caller's mistake returns nil
/// instead of trapping.
enum IPv6HeaderChain {
    /// The length of extension header `proto` starting at `offset`, or nil when
    /// `proto` is not an extension header or its length byte lies outside `bytes`.
    static func extensionLength(_ proto: IPProtocol, at offset: Int, in bytes: UnsafeRawBufferPointer) -> Int? {
        switch proto {
        case .hopByHop, .ipv6Route, .ipv6Options:
            guard offset + 2 <= bytes.count else { return nil }
            return (Int(bytes.u8(offset + 1)) + 1) * 8
        case .ipv6Fragment:
            return IPv6FragmentHeader.length
        case .ah:
            // RFC 4302 §2.2: AH counts 32-bit words, less 2.
            guard offset + 2 <= bytes.count else { return nil }
            return (Int(bytes.u8(offset + 1)) + 2) * 4
        default:
            return nil
        }
    }

    /// The offset of the next-header field whose header starts at `target`:
    /// 6 (the fixed header's) when `target` is 40, else the first byte of the
    /// extension header just before it.
    static func nextHeaderField(before target: Int, in bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= IPv6View.headerLength else { return nil }
        var field = 6
        var offset = IPv6View.headerLength
        var proto = IPProtocol(rawValue: bytes.u8(6))
        while offset < target {
            guard let length = extensionLength(proto, at: offset, in: bytes), offset + length <= bytes.count else {
                return nil
            }
            field = offset
            proto = IPProtocol(rawValue: bytes.u8(offset))
            offset += length
        }
        return offset == target ? field : nil
    }

    /// Where the unfragmentable part ends (RFC 8200 §4.5: the fixed header,
    /// hop-by-hop options, a routing header and the destination options before
    /// it) and the offset of the next-header field that names the first
    /// fragmentable header. Nil when the datagram already has a fragment header.
    static func unfragmentablePart(of bytes: UnsafeRawBufferPointer) -> (length: Int, nextHeaderField: Int)? {
        guard bytes.count >= IPv6View.headerLength else { return nil }
        var field = 6
        var offset = IPv6View.headerLength
        var proto = IPProtocol(rawValue: bytes.u8(6))
        var end = (length: IPv6View.headerLength, nextHeaderField: 6)
        while true {
            switch proto {
            case .hopByHop, .ipv6Route, .ipv6Options:
                guard let length = extensionLength(proto, at: offset, in: bytes), offset + length <= bytes.count else {
                    return nil
                }
                field = offset
                offset += length
                // Destination options count only when a routing header follows them.
                if proto != .ipv6Options { end = (offset, field) }
                proto = IPProtocol(rawValue: bytes.u8(field))
            case .ipv6Fragment:
                return nil
            default:
                return end
            }
        }
    }

    /// The bytes of an upper-layer header a first fragment must hold whole
    /// (RFC 8200 §4.5, RFC 7112): the fixed part of TCP, UDP and ICMP headers.
    static func minimumUpperLayerHeader(_ proto: IPProtocol) -> Int {
        switch proto {
        case .tcp: return 20
        case .udp, .icmp, .icmpv6: return 8
        default: return 0
        }
    }
}
