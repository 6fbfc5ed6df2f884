// DirectPcapFile exists for the live capture: the same savefile PcapFile
// writes, but written through a StagedFile (O_DIRECT where the filesystem
// allows it) instead of stdio and the page cache, which at 1 GB/s of packets
// cost a whole core in ext4's per-page work (docs/capture.md, "Writing").
//
// The file header comes from libpcap itself: its dumper writes into a memory
// stream, and those 24 bytes open the file. Each record is the format's
// 16-byte header (seconds, microseconds, captured and original lengths, in
// the host's byte order as the header's magic says) and the bytes.
internal import CShim
internal import Glibc
internal import Sys

final class DirectPcapFile {
    let path: String
    let snaplen: Int
    /// What is in the file once flushed: the header and every record so far.
    private(set) var bytesWritten = 0
    private(set) var packetsWritten = 0
    private let file: StagedFile

    init(path: String, snaplen: Int, linkType: PcapLinkType = .raw, direct: Bool = true, bufferSize: Int = 4 << 20) throws(CaptureError) {
        guard snaplen > 0, snaplen <= Int(Int32.max) else {
            throw .invalidOption("snaplen \(snaplen) is not a positive 32-bit length")
        }
        let header = try Self.fileHeader(snaplen: snaplen, linkType: linkType, path: path)
        let staged: StagedFile
        do { staged = try StagedFile(path: path, bufferSize: bufferSize, direct: direct) } catch {
            throw .cannotOpen(path: path, reason: error.description)
        }
        let failure: Errno? = header.withUnsafeBytes { bytes in
            do throws(Errno) { try staged.append(bytes) } catch { return error }
            return nil
        }
        if let failure { throw .cannotOpen(path: path, reason: failure.description) }
        file = staged
        self.path = path
        self.snaplen = snaplen
        bytesWritten = header.count
    }

    /// Whether the writes bypass the page cache.
    var isDirect: Bool { file.isDirect }

    func recordSize(forLength length: Int) -> Int {
        PcapFile.recordHeaderSize + min(length, snaplen)
    }

    /// Appends one record, cut to snaplen. Staged: it reaches the file when the
    /// buffer fills or at `flush()`.
    func write(_ bytes: UnsafeRawBufferPointer, originalLength: Int, timestamp: UInt64) throws(CaptureError) {
        let captured = min(bytes.count, snaplen)
        var header: (UInt32, UInt32, UInt32, UInt32) = (
            UInt32(truncatingIfNeeded: timestamp / 1_000_000_000),
            UInt32(truncatingIfNeeded: timestamp % 1_000_000_000 / 1000),
            UInt32(captured),
            UInt32(truncatingIfNeeded: max(originalLength, captured))
        )
        let file = self.file
        var failure: Errno? = withUnsafeBytes(of: &header) { raw in
            do throws(Errno) { try file.append(raw) } catch { return error }
            return nil
        }
        if failure == nil, captured > 0 {
            do { try file.append(UnsafeRawBufferPointer(rebasing: bytes[0 ..< captured])) } catch { failure = error }
        }
        if let failure { throw .writeFailed(path: path, reason: failure.description) }
        bytesWritten += PcapFile.recordHeaderSize + captured
        packetsWritten += 1
    }

    func flush() throws(CaptureError) {
        do { try file.flush() } catch { throw .writeFailed(path: path, reason: error.description) }
    }

    func close() throws(CaptureError) {
        do { try file.close() } catch { throw .writeFailed(path: path, reason: error.description) }
    }

    /// The 24 bytes libpcap's dumper writes first, captured from a memory stream.
    static func fileHeader(snaplen: Int, linkType: PcapLinkType, path: String) throws(CaptureError) -> [UInt8] {
        guard let handle = pcap_open_dead_with_tstamp_precision(
            linkType.dlt, Int32(snaplen), UInt32(PCAP_TSTAMP_PRECISION_MICRO)
        ) else {
            throw .cannotOpen(path: path, reason: "pcap_open_dead failed")
        }
        defer { pcap_close(handle) }
        var buffer: UnsafeMutablePointer<CChar>?
        var length = 0
        guard let stream = open_memstream(&buffer, &length) else {
            throw .cannotOpen(path: path, reason: "open_memstream: \(Errno.current)")
        }
        guard let dumper = pcap_dump_fopen(handle, stream) else {
            let reason = String(cString: pcap_geterr(handle))
            fclose(stream)
            free(buffer)
            throw .cannotOpen(path: path, reason: reason)
        }
        pcap_dump_close(dumper) // closes the stream too, which fixes buffer and length
        defer { free(buffer) }
        guard let buffer, length == PcapFile.fileHeaderSize else {
            throw .cannotOpen(path: path, reason: "libpcap wrote a \(length)-byte file header")
        }
        return Array(UnsafeRawBufferPointer(start: buffer, count: length))
    }
}
