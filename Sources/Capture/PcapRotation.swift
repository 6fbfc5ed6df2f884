// PcapRotation exists so a long capture cannot fill the disk: files are cut at
// a size and only the newest few are kept, named the way logrotate names logs,
// so the newest is always where the user asked for it:
//
//   tun.pcap     the file being written
//   tun.pcap.1   the one before it
//   ...
//   tun.pcap.N-1 the oldest kept (N = rotateCount); older ones are deleted
//
// A file is cut before the record that would take it past `rotateSize`, so no
// file exceeds it unless a single record is larger. Files with higher numbers
// left by an earlier run are not touched.
internal import Sys

final class PcapRotation {
    let basePath: String
    let snaplen: Int
    let rotateSize: Int?
    let rotateCount: Int?
    private(set) var current: DirectPcapFile
    /// Files this object has created, including the current one.
    private(set) var filesOpened = 1
    private(set) var filesRotated = 0

    init(path: String, snaplen: Int, rotateSize: Int?, rotateCount: Int?) throws(CaptureError) {
        if let rotateSize, rotateSize < PcapFile.fileHeaderSize + PcapFile.recordHeaderSize + 1 {
            throw .invalidOption("rotate size \(rotateSize) cannot hold one packet")
        }
        if let rotateCount, rotateCount < 1 {
            throw .invalidOption("rotate count \(rotateCount) must be at least 1")
        }
        basePath = path
        self.snaplen = snaplen
        self.rotateSize = rotateSize
        self.rotateCount = rotateCount
        current = try DirectPcapFile(path: path, snaplen: snaplen)
    }

    /// `tun.pcap` for generation 0, `tun.pcap.1` for 1, and so on.
    static func path(base: String, generation: Int) -> String {
        generation == 0 ? base : "\(base).\(generation)"
    }

    func write(_ bytes: UnsafeRawBufferPointer, originalLength: Int, timestamp: UInt64) throws(CaptureError) {
        if let rotateSize, current.packetsWritten > 0,
           current.bytesWritten + current.recordSize(forLength: bytes.count) > rotateSize {
            try rotate()
        }
        try current.write(bytes, originalLength: originalLength, timestamp: timestamp)
    }

    func flush() throws(CaptureError) { try current.flush() }

    func close() throws(CaptureError) { try current.close() }

    private func rotate() throws(CaptureError) {
        try current.close()
        var onDisk = rotateCount.map { min(filesOpened, $0) } ?? filesOpened
        if let rotateCount, onDisk == rotateCount {
            Files.remove(Self.path(base: basePath, generation: rotateCount - 1))
            onDisk -= 1
        }
        for generation in stride(from: onDisk - 1, through: 0, by: -1) {
            let from = Self.path(base: basePath, generation: generation)
            let to = Self.path(base: basePath, generation: generation + 1)
            do { try Files.rename(from, to: to) } catch {
                throw .writeFailed(path: from, reason: "rename to \(to): \(error)")
            }
        }
        current = try DirectPcapFile(path: basePath, snaplen: snaplen)
        filesOpened += 1
        filesRotated += 1
    }
}
