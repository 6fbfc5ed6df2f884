// PcapReader exists for `sluice replay`: it opens any classic pcap (or pcapng)
// file libpcap can read and yields each frame's IP datagram with its
// timestamp, whatever the link layer (see PcapLinkType). Frames with no
// IPv4/IPv6 datagram (ARP, LLDP) are skipped and counted. No copies: a
// packet's bytes point into libpcap's buffer until the next call.
internal import CShim
internal import Sys
internal import Wire

public final class PcapReader {
    public let path: String
    public let linkType: PcapLinkType
    public let snaplen: Int
    /// Frames read from the file so far, skipped ones included (tshark's frame number).
    public private(set) var framesRead = 0
    /// Frames that carried no IP datagram.
    public private(set) var framesSkipped = 0
    private let handle: OpaquePointer

    public init(path: String) throws(CaptureError) {
        // Ask the kernel first, so "no such file" and "permission denied" come
        // back as errno rather than as libpcap's text about a bad format.
        do {
            let probe = try FileDescriptor.open(path, flags: O_RDONLY)
            try probe.close()
        } catch {
            throw .cannotOpen(path: path, reason: error.description)
        }
        var message = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE))
        let opened = message.withUnsafeMutableBufferPointer {
            pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_NANO), $0.baseAddress)
        }
        guard let handle = opened else {
            let reason = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw .notCaptureFile(path: path, reason: reason)
        }
        let dlt = pcap_datalink(handle)
        guard let linkType = PcapLinkType(dlt: dlt) else {
            let name = pcap_datalink_val_to_name(dlt).map { String(cString: $0) } ?? "unknown"
            pcap_close(handle)
            throw .unsupportedLinkType(path: path, linkType: dlt, name: name)
        }
        self.path = path
        self.handle = handle
        self.linkType = linkType
        snaplen = Int(pcap_snapshot(handle))
    }

    deinit { pcap_close(handle) }

    /// The next frame that carries an IP datagram, or nil at the end of the
    /// file. A record cut short by the end of the file throws.
    public func next() throws(CaptureError) -> PcapPacket? {
        while true {
            var header: UnsafeMutablePointer<pcap_pkthdr>?
            var data: UnsafePointer<UInt8>?
            let status = pcap_next_ex(handle, &header, &data)
            switch status {
            case 1:
                break
            case PCAP_ERROR_BREAK:
                return nil
            default:
                throw .readFailed(path: path, reason: String(cString: pcap_geterr(handle)))
            }
            guard let header = header?.pointee else { return nil }
            framesRead += 1
            let frame = UnsafeRawBufferPointer(start: data, count: Int(header.caplen))
            guard let offset = linkType.datagramOffset(in: frame) else {
                framesSkipped += 1
                continue
            }
            // With nanosecond precision requested, tv_usec holds nanoseconds.
            let timestamp = UInt64(header.ts.tv_sec) &* 1_000_000_000 &+ UInt64(header.ts.tv_usec)
            return PcapPacket(
                frameNumber: framesRead,
                timestamp: timestamp,
                datagram: frame.suffix(from: offset),
                originalLength: max(Int(header.len) - offset, frame.count - offset)
            )
        }
    }
}

extension PcapReader: CustomStringConvertible {
    public var description: String { "\(path): \(linkType), snaplen \(snaplen), \(framesRead) frames read" }
}

/// One frame's IP datagram. `datagram` is valid until the reader's next call.
public struct PcapPacket: CustomStringConvertible {
    /// 1-based, counting skipped frames, so it matches tshark's `frame.number`.
    public var frameNumber: Int
    /// Nanoseconds since the Unix epoch.
    public var timestamp: UInt64
    /// The IPv4 or IPv6 datagram, link header removed, possibly cut by snaplen.
    public var datagram: UnsafeRawBufferPointer
    /// The datagram's length on the wire.
    public var originalLength: Int

    public var isTruncated: Bool { datagram.count < originalLength }

    /// `3 1764500000.123456 IP 10.0.0.1 > 10.0.0.2: ICMP echo request, id 7, seq 1, length 64`
    public var description: String {
        let seconds = timestamp / 1_000_000_000
        let micros = timestamp % 1_000_000_000 / 1000
        let fraction = String(micros)
        let time = "\(seconds)." + String(repeating: "0", count: 6 - fraction.count) + fraction
        let packet: String
        if let view = try? IPPacketView(datagram) {
            packet = view.description
        } else {
            packet = "IP\(datagram.count > 0 && datagram.u8(0) >> 4 == 6 ? "6" : "") datagram, \(datagram.count) of \(originalLength) bytes captured"
        }
        return "\(frameNumber) \(time) \(packet)"
    }
}
