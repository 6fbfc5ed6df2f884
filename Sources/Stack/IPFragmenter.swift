public import Wire

/// Splits a datagram Sluice sends back through the TUN into fragments that
/// fit the MTU: IPv4 by RFC 791 §3.2 (only options with the copy flag repeat
/// after the first fragment), IPv6 with a fragment header after the
/// unfragmentable part (RFC 8200 §4.5). The engine needs it when a UDP reply
/// from upstream is larger than the TUN's MTU.
public enum IPFragmenter {
    public enum Outcome: Sendable, Equatable, CustomStringConvertible {
        /// It fits: written unchanged, as one packet.
        case whole
        /// Written as this many fragments.
        case fragments(Int)
        /// Nothing written.
        case refused(Refusal)

        public var description: String {
            switch self {
            case .whole: return "whole"
            case let .fragments(n): return "\(n) fragments"
            case let .refused(reason): return "refused: \(reason)"
            }
        }
    }

    public enum Refusal: Sendable, Equatable {
        /// IPv4 with DF set: the sender forbade it.
        case dontFragment
        /// Too small for the headers, 8 bytes of data and (in the first fragment)
        /// the upper-layer header.
        case mtuTooSmall
        /// An IPv6 datagram that already has a fragment header.
        case alreadyFragmented
    }

    /// Writes `packet` to `sink` as fragments of at most `mtu` bytes each.
    /// `identification` is for IPv6, whose datagrams carry none of their own
    /// (RFC 7739 wants it unpredictable: the engine draws it at random); IPv4
    /// fragments keep the datagram's identification. An IPv4 datagram that is
    /// itself a fragment is split further, with offsets and the last "more
    /// fragments" flag carried over.
    public static func fragment(_ packet: IPPacketView, mtu: Int, identification: UInt32,
                                sink: inout some PacketSink) -> Outcome {
        let bytes = packet.bytes
        if bytes.count <= mtu {
            sink.send(capacity: bytes.count) { out in
                out.sub(0, bytes.count).copyMemory(from: bytes)
                return bytes.count
            }
            return .whole
        }
        switch packet.network {
        case let .v4(ip): return fragment(ip, mtu: mtu, sink: &sink)
        case let .v6(ip): return fragment(ip, mtu: mtu, identification: identification, sink: &sink)
        }
    }

    static func fragment(_ ip: IPv4View, mtu: Int, sink: inout some PacketSink) -> Outcome {
        guard !ip.dontFragment else { return .refused(.dontFragment) }
        return withUnsafeTemporaryAllocation(byteCount: 40, alignment: 8) { copied -> Outcome in
            // Options whose copy flag is set go into every fragment; the rest only into the first.
            var n = 0
            for option in ip.optionList where option.type & 0x80 != 0 {
                let length = 2 + option.data.count
                guard n + length <= copied.count else { break }
                copied[n] = option.type
                copied[n + 1] = UInt8(length)
                copied.sub(n + 2, option.data.count).copyMemory(from: option.data)
                n += length
            }
            let laterOptions = UnsafeRawBufferPointer(copied.sub(0, n))
            let firstHeaderLength = ip.headerLength
            let laterHeaderLength = IPv4View.minimumHeaderLength + (n + 3) / 4 * 4
            let firstChunk = (mtu - firstHeaderLength) & ~7, laterChunk = (mtu - laterHeaderLength) & ~7
            let payload = ip.payload
            let needed = min(IPv6HeaderChain.minimumUpperLayerHeader(ip.protocol), payload.count)
            guard firstChunk >= max(8, ip.fragmentOffset == 0 ? needed : 0), laterChunk >= 8 else {
                return .refused(.mtuTooSmall)
            }
            let header = IPv4Header(ip)
            var offset = 0, count = 0
            while offset < payload.count {
                let isFirst = offset == 0
                let chunk = min(isFirst ? firstChunk : laterChunk, payload.count - offset)
                let isLast = offset + chunk == payload.count
                var h = header
                h.headerLength = isFirst ? firstHeaderLength : laterHeaderLength
                h.totalLength = h.headerLength + chunk
                h.moreFragments = !isLast || ip.moreFragments
                h.fragmentOffset = UInt16((ip.fragmentByteOffset + offset) / 8)
                let options = isFirst ? ip.options : laterOptions
                let at = offset
                sink.send(capacity: h.totalLength) { out in
                    out.sub(h.headerLength, chunk).copyMemory(from: payload.sub(at, chunk))
                    guard (try? h.emit(into: out.sub(0, h.headerLength), options: options)) != nil else { return 0 }
                    return h.totalLength
                }
                offset += chunk
                count += 1
            }
            return .fragments(count)
        }
    }

    static func fragment(_ ip: IPv6View, mtu: Int, identification: UInt32, sink: inout some PacketSink) -> Outcome {
        let bytes = ip.bytes
        guard ip.fragmentHeaderOffset == nil, let (unfragmentable, field) = IPv6HeaderChain.unfragmentablePart(of: bytes)
        else { return .refused(.alreadyFragmented) }
        let chunk = (mtu - unfragmentable - IPv6FragmentHeader.length) & ~7
        // RFC 8200 §4.5, RFC 7112: the first fragment holds the whole header
        // chain, up to and including the upper-layer header.
        let needed = ip.upperLayerOffset - unfragmentable
            + min(IPv6HeaderChain.minimumUpperLayerHeader(ip.upperLayerProtocol), ip.upperLayerPayload.count)
        guard chunk >= max(8, needed) else { return .refused(.mtuTooSmall) }
        let fragmentable = bytes.suffix(from: unfragmentable)
        let nextHeader = IPProtocol(rawValue: bytes.u8(field))
        var offset = 0, count = 0
        while offset < fragmentable.count {
            let n = min(chunk, fragmentable.count - offset)
            let total = unfragmentable + IPv6FragmentHeader.length + n
            let header = IPv6FragmentHeader(nextHeader: nextHeader, fragmentOffset: UInt16(offset / 8),
                                            moreFragments: offset + n < fragmentable.count, identification: identification)
            let at = offset
            sink.send(capacity: total) { out in
                out.sub(0, unfragmentable).copyMemory(from: bytes.sub(0, unfragmentable))
                out.setU16(4, UInt16(total - IPv6View.headerLength))
                out.setU8(field, IPProtocol.ipv6Fragment.rawValue)
                guard (try? header.emit(into: out.sub(unfragmentable, IPv6FragmentHeader.length))) != nil else { return 0 }
                out.sub(unfragmentable + IPv6FragmentHeader.length, n).copyMemory(from: fragmentable.sub(at, n))
                return total
            }
            offset += n
            count += 1
        }
        return .fragments(count)
    }
}
