import Wire

/// What the TCP and DNS tests need from an IP datagram in a fixture. The IP
/// parsers live elsewhere, so this reads the few fields by hand: IPv4's IHL
/// and total length (Ethernet may pad short frames), IPv6's payload length
/// and a next header of TCP or UDP (the fixtures carry no extension headers).
struct TransportFixture {
    var source: IPAddress
    var destination: IPAddress
    var protocolNumber: UInt8
    var payload: [UInt8]

    init?(datagram b: [UInt8]) {
        guard let first = b.first else { return nil }
        switch first >> 4 {
        case 4:
            let ihl = Int(first & 0x0f) * 4
            guard ihl >= 20, b.count >= ihl else { return nil }
            let total = Int(b[2]) << 8 | Int(b[3])
            guard total >= ihl, total <= b.count else { return nil }
            source = .v4(IPv4Address(b[12], b[13], b[14], b[15]))
            destination = .v4(IPv4Address(b[16], b[17], b[18], b[19]))
            protocolNumber = b[9]
            payload = Array(b[ihl ..< total])
        case 6:
            guard b.count >= 40, b[6] == 6 || b[6] == 17 else { return nil }
            let length = Int(b[4]) << 8 | Int(b[5])
            guard 40 + length <= b.count else { return nil }
            source = .v6(b.withUnsafeBytes { IPv6Address.load($0, 8) })
            destination = .v6(b.withUnsafeBytes { IPv6Address.load($0, 24) })
            protocolNumber = b[6]
            payload = Array(b[40 ..< 40 + length])
        default:
            return nil
        }
    }

    var isTCP: Bool { protocolNumber == 6 }
    var isUDP: Bool { protocolNumber == 17 }

    /// The UDP payload, for DNS: the 8-byte UDP header skipped.
    var udpPayload: [UInt8] { Array(payload.dropFirst(8)) }
    var sourcePort: UInt16 { UInt16(payload[0]) << 8 | UInt16(payload[1]) }
}

/// A buffer filled with a byte no field should end up holding by accident, so
/// that an emitter that skips a byte is caught by re-parsing.
func poisonedBytes(_ count: Int, _ poison: UInt8 = 0xaa) -> [UInt8] {
    [UInt8](repeating: poison, count: count)
}
