/// Where the stack writes the packets it sends back into the TUN. The engine
/// hands out pooled buffers and batches the writes; tests collect arrays.
public protocol PacketSink {
    /// Offers a buffer of at least `capacity` bytes; `fill` writes one packet
    /// from its start and returns the length (0 to send nothing).
    mutating func send(capacity: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Int)
}

/// A sink that keeps every packet as an array: for tests and tools, not the packet path.
public struct CollectingSink: PacketSink {
    public var packets: [[UInt8]] = []
    public init() {}
    public mutating func send(capacity: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Int) {
        var buffer = [UInt8](repeating: 0, count: capacity)
        let n = buffer.withUnsafeMutableBytes { fill($0) }
        if n > 0 { packets.append(Array(buffer.prefix(n))) }
    }
}
