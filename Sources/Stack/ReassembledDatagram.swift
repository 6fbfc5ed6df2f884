public import Wire

/// A whole datagram rebuilt from fragments (or from an IPv6 atomic fragment),
/// as contiguous bytes: IPv4 with a fresh header (no fragment flags, offset 0,
/// the full total length and a new checksum), IPv6 without its fragment header
/// (the next header and payload length fixed up).
///
/// The bytes were validated as an `IPPacketView` when the datagram was
/// built, and never change, so `withPacket` cannot fail. The storage is one
/// allocation per datagram: fragments are rare, and the bytes must outlive the
/// fragments they came from.
public struct ReassembledDatagram: CustomStringConvertible {
    final class Storage {
        let bytes: UnsafeMutableRawBufferPointer
        init(count: Int) { bytes = .allocate(byteCount: count, alignment: 8) }
        deinit { bytes.deallocate() }
    }

    let storage: Storage
    /// Made once, over `storage`, when the bytes were validated.
    let view: IPPacketView
    /// How many fragments it was made from (1 for an atomic fragment).
    public let fragmentCount: Int

    init(storage: Storage, view: IPPacketView, fragmentCount: Int) {
        self.storage = storage
        self.view = view
        self.fragmentCount = fragmentCount
    }

    /// The datagram's length in bytes.
    public var count: Int { storage.bytes.count }

    /// A copy of the bytes, for tests and tools; the packet path uses `withPacket`.
    public var bytes: [UInt8] { Array(UnsafeRawBufferPointer(storage.bytes)) }

    /// Lends the validated view; it must not escape `body`.
    public func withPacket<R>(_ body: (IPPacketView) throws -> R) rethrows -> R {
        defer { withExtendedLifetime(storage) {} }
        return try body(view)
    }

    /// tcpdump's line for the whole datagram, and how many fragments made it.
    public var description: String {
        withPacket { "\($0) (reassembled from \(fragmentCount))" }
    }
}
