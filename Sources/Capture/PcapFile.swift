// PcapFile exists to write a classic pcap savefile with libpcap's own writer
// (a "dead" handle and pcap_dump), so the files are exactly what tcpdump and
// tshark expect: LINKTYPE_RAW (101) for Sluice's TUN traffic, microsecond
// timestamps. One thread at a time; PacketRecorder gives it its own.
internal import CShim
internal import Glibc
internal import Sys

public final class PcapFile {
    /// The 24-byte file header libpcap writes before the first record.
    public static let fileHeaderSize = 24
    /// Each record's header: seconds, microseconds, captured and original lengths.
    public static let recordHeaderSize = 16
    static let streamBufferSize = 1 << 20

    public let path: String
    public let snaplen: Int
    public let linkType: PcapLinkType
    /// What is in the file once flushed: the header and every record so far.
    public private(set) var bytesWritten: Int = PcapFile.fileHeaderSize
    public private(set) var packetsWritten: Int = 0

    private let handle: OpaquePointer
    private var dumper: OpaquePointer?

    /// Creates (or truncates) `path`.
    public init(path: String, snaplen: Int = 65535, linkType: PcapLinkType = .raw) throws(CaptureError) {
        guard snaplen > 0, snaplen <= Int(Int32.max) else {
            throw .invalidOption("snaplen \(snaplen) is not a positive 32-bit length")
        }
        guard let handle = pcap_open_dead_with_tstamp_precision(
            linkType.dlt, Int32(snaplen), UInt32(PCAP_TSTAMP_PRECISION_MICRO)
        ) else {
            throw .cannotOpen(path: path, reason: "pcap_open_dead failed")
        }
        // Our own FILE rather than pcap_dump_open's, to give it a 1 MiB buffer
        // before the first write: stdio's default (4 KiB) would mean a write(2)
        // for every two or three full-size packets.
        guard let stream = fopen(path, "wb") else {
            let reason = Errno.current.description
            pcap_close(handle)
            throw .cannotOpen(path: path, reason: reason)
        }
        setvbuf(stream, nil, _IOFBF, Self.streamBufferSize)
        guard let dumper = pcap_dump_fopen(handle, stream) else {
            let reason = String(cString: pcap_geterr(handle))
            fclose(stream)
            pcap_close(handle)
            throw .cannotOpen(path: path, reason: reason)
        }
        self.path = path
        self.snaplen = snaplen
        self.linkType = linkType
        self.handle = handle
        self.dumper = dumper
    }

    deinit {
        if let dumper { pcap_dump_close(dumper) }
        pcap_close(handle)
    }

    /// The size a record for a packet of `length` bytes takes in the file.
    public func recordSize(forLength length: Int) -> Int {
        Self.recordHeaderSize + min(length, snaplen)
    }

    /// Appends one record, cut to snaplen. `originalLength` is the length on the
    /// wire when `bytes` is already cut; it defaults to `bytes.count`.
    /// Buffered by stdio: nothing reaches the disk before `flush()` or a full buffer.
    public func write(_ bytes: UnsafeRawBufferPointer, originalLength: Int? = nil, timestamp: UInt64) {
        guard let dumper else { return }
        let captured = min(bytes.count, snaplen)
        var header = pcap_pkthdr()
        header.ts.tv_sec = Int(timestamp / 1_000_000_000)
        header.ts.tv_usec = Int(timestamp % 1_000_000_000 / 1000)
        header.caplen = UInt32(captured)
        header.len = UInt32(truncatingIfNeeded: max(originalLength ?? bytes.count, captured))
        let user = UnsafeMutableRawPointer(dumper).assumingMemoryBound(to: UInt8.self)
        let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        // pcap_dump dereferences the data pointer only for caplen bytes; a
        // zero-length packet has no base address, so give it a valid one.
        if let data {
            pcap_dump(user, &header, data)
        } else {
            var empty: UInt8 = 0
            pcap_dump(user, &header, &empty)
        }
        bytesWritten += Self.recordHeaderSize + captured
        packetsWritten += 1
    }

    /// Pushes stdio's buffer to the kernel.
    public func flush() throws(CaptureError) {
        guard let dumper else { return }
        if pcap_dump_flush(dumper) != 0 {
            throw .writeFailed(path: path, reason: Errno.current.description)
        }
    }

    /// Flushes and closes; writing afterwards does nothing. Idempotent.
    public func close() throws(CaptureError) {
        guard let dumper else { return }
        self.dumper = nil
        let flushed = pcap_dump_flush(dumper)
        let reason = flushed != 0 ? Errno.current.description : ""
        pcap_dump_close(dumper)
        if flushed != 0 { throw .writeFailed(path: path, reason: reason) }
    }
}

extension PcapFile: CustomStringConvertible {
    public var description: String {
        "\(path): \(linkType), snaplen \(snaplen), \(packetsWritten) packets, \(bytesWritten) bytes"
    }
}
