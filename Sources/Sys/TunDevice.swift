// TunDevice exists because the TUN is where Sluice meets the kernel's IP
// stack: every packet an application sends arrives here as one read(), and
// every reply goes back as one write(). Non-blocking, so the event loop can
// drain it in batches until the kernel has nothing more.
import CShim
import Glibc

public struct TunDevice: ~Copyable, Sendable {
    public let descriptor: FileDescriptor
    /// The interface name, as the kernel chose or confirmed it (e.g. "tun0").
    public let name: String
    /// Bytes of virtio_net_hdr before each packet when opened with `.virtioNetHeader`, else 0.
    public let virtioHeaderLength: Int

    public struct Options: OptionSet, Sendable, Hashable {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// One queue per descriptor: open the same name again to add a queue.
        public static let multiQueue = Options(rawValue: cshim_IFF_MULTI_QUEUE)
        /// Each packet carries a virtio_net_hdr (GSO/checksum offload metadata).
        public static let virtioNetHeader = Options(rawValue: cshim_IFF_VNET_HDR)
    }

    /// Offloads the reader accepts from the kernel (TUNSETOFFLOAD); only
    /// meaningful with `.virtioNetHeader`.
    public struct Offloads: OptionSet, Sendable, Hashable {
        public var rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let checksum = Offloads(rawValue: UInt(cshim_TUN_F_CSUM))
        public static let tcpSegmentation4 = Offloads(rawValue: UInt(cshim_TUN_F_TSO4))
        public static let tcpSegmentation6 = Offloads(rawValue: UInt(cshim_TUN_F_TSO6))
    }

    /// Opens /dev/net/tun and attaches it to interface `name` (created if
    /// missing; "" or a pattern like "sluice%d" lets the kernel pick), with
    /// IFF_TUN|IFF_NO_PI so reads and writes are bare IP datagrams.
    public init(
        name: String = "",
        options: Options = [],
        virtioHeaderLength: Int = VirtioNetHeader.length
    ) throws(Errno) {
        guard name.utf8.count < Int(IFNAMSIZ) else { throw Errno.invalidArgument }
        precondition(virtioHeaderLength >= VirtioNetHeader.length && virtioHeaderLength <= MemoryLayout<VirtioNetHeader>.size,
                     "a virtio_net_hdr is 10 or 12 bytes")
        let fd = try FileDescriptor.open("/dev/net/tun", flags: O_RDWR | O_NONBLOCK)
        var request = ifreq()
        let flags = Int16(truncatingIfNeeded: cshim_IFF_TUN | cshim_IFF_NO_PI | options.rawValue)
        cshim_ifreq_set(&request, name, flags)
        _ = try valueOrErrno { cshim_ioctl_ptr(fd.rawValue, cshim_TUNSETIFF, &request) }.get()
        if options.contains(.virtioNetHeader) {
            var length = Int32(virtioHeaderLength)
            _ = try valueOrErrno { cshim_ioctl_ptr(fd.rawValue, cshim_TUNSETVNETHDRSZ, &length) }.get()
            self.virtioHeaderLength = virtioHeaderLength
        } else {
            self.virtioHeaderLength = 0
        }
        self.name = String(cString: cshim_ifreq_name(&request))
        self.descriptor = fd
    }

    /// Wraps a TUN descriptor opened elsewhere: typically inside another
    /// network namespace's thread, handed back to the event loop's thread.
    public init(adopting rawDescriptor: Int32, name: String, virtioHeaderLength: Int = 0) {
        descriptor = FileDescriptor(rawValue: rawDescriptor)
        self.name = name
        self.virtioHeaderLength = virtioHeaderLength
    }

    /// Gives up ownership of the descriptor, to carry it out of a namespace
    /// thread; wrap it again with `init(adopting:name:)`.
    public consuming func releaseDescriptor() -> Int32 {
        descriptor.release()
    }

    /// Tells the kernel which offloads we can take (TUNSETOFFLOAD).
    public func setOffloads(_ offloads: Offloads) throws(Errno) {
        _ = try valueOrErrno { cshim_ioctl_ulong(descriptor.rawValue, cshim_TUNSETOFFLOAD, offloads.rawValue) }.get()
    }

    /// Reads one packet. `.value(n)`: the first n bytes of `buffer` are one
    /// datagram (a packet longer than the buffer is cut short by the kernel).
    /// With a virtio_net_hdr, it is read apart and dropped; without
    /// checksum offload (`setOffloads`) every checksum comes complete.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> SysResult<Int> {
        var vouched = false
        return try read(into: buffer, checksumVouchedFor: &vouched)
    }

    /// As `read(into:)`, and sets `checksumVouchedFor` when the kernel vouches
    /// for the packet's TCP or UDP checksum: with `.checksum` offload on, a
    /// packet from a socket in the namespace comes with NEEDS_CSUM and only
    /// the pseudo-header's sum in its checksum field, and one the kernel
    /// checked already with DATA_VALID. Either way nothing on the path could
    /// have corrupted it.
    public func read(into buffer: UnsafeMutableRawBufferPointer, checksumVouchedFor: inout Bool) throws(Errno) -> SysResult<Int> {
        checksumVouchedFor = false
        guard virtioHeaderLength > 0 else { return try descriptor.read(into: buffer) }
        var header = VirtioNetHeader.zero
        defer { checksumVouchedFor = header.flags & (VirtioNetHeader.needsChecksum | VirtioNetHeader.dataValid) != 0 }
        return try withUnsafeMutableBytes(of: &header) { headerBytes throws(Errno) in
            var vectors = (iovec(iov_base: headerBytes.baseAddress, iov_len: virtioHeaderLength),
                           iovec(iov_base: buffer.baseAddress, iov_len: buffer.count))
            let result = try withUnsafeBytes(of: &vectors) { raw throws(Errno) in
                try descriptor.readv(UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: iovec.self), count: 2))
            }
            return result.map { max($0 - virtioHeaderLength, 0) }
        }
    }

    /// Writes one whole packet; the kernel takes all of it or none.
    public func write(_ packet: UnsafeRawBufferPointer) throws(Errno) -> SysResult<Int> {
        guard virtioHeaderLength > 0 else { return try descriptor.write(packet) }
        return try write(packet, UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// Writes one packet given in two pieces (headers, then a payload left
    /// where it lies), gathered by the kernel: the payload is copied once,
    /// into the kernel's buffer, instead of first behind the headers.
    public func write(_ head: UnsafeRawBufferPointer, _ payload: UnsafeRawBufferPointer) throws(Errno) -> SysResult<Int> {
        try write(head, payload, header: .zero)
    }

    /// Writes one TCP or UDP packet whose checksum field holds only the
    /// pseudo-header's sum: the kernel completes it over the bytes from
    /// `checksumStart` and stores it `checksumOffset` bytes further
    /// (VIRTIO_NET_HDR_F_NEEDS_CSUM), and only if the packet is forwarded
    /// on: a socket in the namespace takes it as checked. Needs a TUN opened
    /// with `.virtioNetHeader`.
    public func writeCompletingChecksum(_ head: UnsafeRawBufferPointer, _ payload: UnsafeRawBufferPointer,
                                        checksumStart: Int, checksumOffset: Int) throws(Errno) -> SysResult<Int> {
        precondition(virtioHeaderLength > 0, "checksum offload needs a virtio_net_hdr")
        var header = VirtioNetHeader.zero
        header.flags = VirtioNetHeader.needsChecksum
        header.checksumStart = UInt16(truncatingIfNeeded: checksumStart)
        header.checksumOffset = UInt16(truncatingIfNeeded: checksumOffset)
        return try write(head, payload, header: header)
    }

    private func write(_ head: UnsafeRawBufferPointer, _ payload: UnsafeRawBufferPointer,
                       header: VirtioNetHeader) throws(Errno) -> SysResult<Int> {
        var header = header
        return try withUnsafeBytes(of: &header) { headerBytes throws(Errno) in
            var vectors = (iovec(iov_base: UnsafeMutableRawPointer(mutating: headerBytes.baseAddress), iov_len: virtioHeaderLength),
                           iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress), iov_len: head.count),
                           iovec(iov_base: UnsafeMutableRawPointer(mutating: payload.baseAddress), iov_len: payload.count))
            // Without a virtio_net_hdr the first vector is empty and skipped.
            let result = try withUnsafeBytes(of: &vectors) { raw throws(Errno) in
                try descriptor.writev(UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: iovec.self), count: 3))
            }
            return result.map { max($0 - virtioHeaderLength, 0) }
        }
    }

    /// Reads packets into `buffers[0]`, `buffers[1]`, ... until the kernel
    /// has none left or every buffer is used, storing each length in
    /// `lengths[i]`. Returns how many were read (0 when nothing was waiting).
    /// An error after some packets were read ends the batch and is reported
    /// by the next call, so no packet is lost.
    public func readBatch(
        into buffers: UnsafeBufferPointer<UnsafeMutableRawBufferPointer>,
        lengths: UnsafeMutableBufferPointer<Int>
    ) throws(Errno) -> Int {
        let limit = min(buffers.count, lengths.count)
        var count = 0
        while count < limit {
            let result: SysResult<Int>
            do {
                result = try descriptor.read(into: buffers[count])
            } catch {
                if count == 0 { throw error }
                return count
            }
            switch result {
            case .value(let length):
                lengths[count] = length
                count += 1
            case .wouldBlock:
                return count
            }
        }
        return count
    }
}

/// struct virtio_net_hdr (with the 12-byte variant's num_buffers). Its fields
/// are in native byte order: we set neither TUNSETVNETLE nor TUNSETVNETBE,
/// so the TUN reads them as legacy virtio does.
public struct VirtioNetHeader: Sendable {
    /// The 10-byte header without num_buffers.
    public static let length = 10
    public var flags: UInt8 = 0
    public var gsoType: UInt8 = 0
    public var headerLength: UInt16 = 0
    public var gsoSize: UInt16 = 0
    public var checksumStart: UInt16 = 0
    public var checksumOffset: UInt16 = 0
    public var bufferCount: UInt16 = 0
    public static let zero = VirtioNetHeader()
    /// VIRTIO_NET_HDR_F_NEEDS_CSUM: the checksum is to be completed from `checksumStart`.
    public static let needsChecksum: UInt8 = 1
    /// VIRTIO_NET_HDR_F_DATA_VALID: the kernel checked the checksum already.
    public static let dataValid: UInt8 = 2
}
