/// Where the stack writes the packets it sends back into the TUN. The engine
/// hands out pooled buffers and batches the writes; tests collect arrays.
public protocol PacketSink {
    /// Offers a buffer of at least `capacity` bytes; `fill` writes one packet
    /// from its start and returns the length (0 to send nothing).
    mutating func send(capacity: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Int)

    /// Sends a packet made of headers, which `fillHeaders` writes (at most
    /// `headerCapacity` bytes; it returns their length, 0 to send nothing),
    /// and `payload` after them. A sink that can gather (the TUN's writev)
    /// sends the payload from where it lies; the default copies it behind
    /// the headers (`sendCopying`).
    mutating func send(headerCapacity: Int, payload: UnsafeRawBufferPointer,
                       _ fillHeaders: (UnsafeMutableRawBufferPointer) -> Int)

    /// True when the sink's device completes TCP checksums (checksum
    /// offload): the headers `send(headerCapacity:payload:_:)` asks for then
    /// carry only the pseudo-header's sum, and no pass over the payload is
    /// made here. False by default.
    var completesTCPChecksums: Bool { get }
}

extension PacketSink {
    public var completesTCPChecksums: Bool { false }

    public mutating func send(headerCapacity: Int, payload: UnsafeRawBufferPointer,
                              _ fillHeaders: (UnsafeMutableRawBufferPointer) -> Int) {
        sendCopying(headerCapacity: headerCapacity, payload: payload, fillHeaders)
    }

    /// The headers and a copy of the payload in one buffer from `send(capacity:)`.
    public mutating func sendCopying(headerCapacity: Int, payload: UnsafeRawBufferPointer,
                                     _ fillHeaders: (UnsafeMutableRawBufferPointer) -> Int) {
        send(capacity: headerCapacity + payload.count) { buffer in
            guard buffer.count >= headerCapacity + payload.count else { return 0 }
            let headers = fillHeaders(UnsafeMutableRawBufferPointer(rebasing: buffer[..<headerCapacity]))
            guard headers > 0 else { return 0 }
            UnsafeMutableRawBufferPointer(rebasing: buffer[headers ..< headers + payload.count]).copyMemory(from: payload)
            return headers + payload.count
        }
    }
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
