// fuzz-sources: Sources/Wire
// fuzz-corpus: wire
// libFuzzer harness for the packet parsers: whatever the bytes, parsing
// either throws or yields a view whose every accessor, checksum and
// description works, and whose value re-emits and re-parses to itself.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWire(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    exercisePacket(bytes)
    // Each transport parser also sees the raw bytes, as if the IP header were gone.
    if let tcp = try? TCPView(bytes) {
        _ = tcp.description
        _ = tcp.isChecksumValid(source: IPv4Address(1), destination: IPv4Address(2))
        for option in tcp.optionList { _ = option.description }
        roundTrip(TCPHeader(tcp))
    }
    if let udp = try? UDPView(bytes) {
        _ = udp.description
        _ = udp.verifyChecksum(source: IPv6Address.loopback, destination: IPv6Address.loopback)
    }
    if let icmp = try? ICMPv4View(bytes) { _ = icmp.description; _ = icmp.verifyChecksum() }
    if let icmp = try? ICMPv6View(bytes) { _ = icmp.description }
    _ = try? IPPacketView(quoted: bytes).description
    return 0
}

func exercisePacket(_ bytes: UnsafeRawBufferPointer) {
    guard let packet = try? IPPacketView(bytes) else { return }
    _ = packet.description
    _ = packet.source
    _ = packet.destination
    _ = packet.fragment
    _ = packet.verifyUpperLayerChecksum()
    let payload = packet.payload
    switch packet.upperLayerProtocol {
    case .tcp:
        if let tcp = try? TCPView(payload) { roundTrip(TCPHeader(tcp)) }
    case .udp:
        if let udp = try? UDPView(payload) { _ = UDPHeader(udp).description }
    default:
        break
    }
}

/// A parsed TCP header emits into a buffer and parses back to the same value.
func roundTrip(_ header: TCPHeader) {
    withUnsafeTemporaryAllocation(byteCount: 60, alignment: 8) { buffer in
        guard let n = try? header.emit(into: buffer) else { return }
        let again = try! TCPHeader.parse(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        precondition(again.options == header.options, "TCP options changed in a round trip: \(header) vs \(again)")
        precondition(again.sequenceNumber == header.sequenceNumber && again.flags == header.flags)
    }
}
