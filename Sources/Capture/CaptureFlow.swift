// CaptureFlow names one flow as the capture writer sees it: the app's address
// and port, the remote address and port, the protocol; the same both ways.
// ICMP echo uses its identifier as both ports. The writer reads it from each
// record's headers (FlowPcapFiles.key), and the loop names the flows it wants
// kept in selection records (PacketRecorder.select, `capture` rules).
public import Wire

public struct CaptureFlow: Hashable, Sendable, CustomStringConvertible {
    public var transport: UInt8
    public var app: IPAddress
    public var appPort: UInt16
    public var remote: IPAddress
    public var remotePort: UInt16

    public init(transport: UInt8, app: IPAddress, appPort: UInt16, remote: IPAddress, remotePort: UInt16) {
        self.transport = transport; self.app = app; self.appPort = appPort; self.remote = remote; self.remotePort = remotePort
    }

    public var description: String { "\(transport) \(app).\(appPort)-\(remote).\(remotePort)" }

    /// A selection record's bytes: transport, keep, two address families, the
    /// two ports (big-endian), the two addresses in 16 bytes each.
    static let selectionSize = 40

    func encodeSelection(keep: Bool, into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= Self.selectionSize)
        out[0] = transport
        out[1] = keep ? 1 : 0
        out[4] = UInt8(appPort >> 8); out[5] = UInt8(truncatingIfNeeded: appPort)
        out[6] = UInt8(remotePort >> 8); out[7] = UInt8(truncatingIfNeeded: remotePort)
        out[2] = Self.store(app, into: out, at: 8)
        out[3] = Self.store(remote, into: out, at: 24)
    }

    static func decodeSelection(_ bytes: UnsafeRawBufferPointer) -> (flow: CaptureFlow, keep: Bool)? {
        guard bytes.count >= selectionSize,
              let app = load(bytes, at: 8, family: bytes[2]), let remote = load(bytes, at: 24, family: bytes[3]) else { return nil }
        let flow = CaptureFlow(transport: bytes[0], app: app, appPort: UInt16(bytes[4]) << 8 | UInt16(bytes[5]),
                               remote: remote, remotePort: UInt16(bytes[6]) << 8 | UInt16(bytes[7]))
        return (flow, bytes[1] != 0)
    }

    private static func store(_ address: IPAddress, into out: UnsafeMutableRawBufferPointer, at offset: Int) -> UInt8 {
        switch address {
        case let .v4(a):
            for i in 0 ..< 4 { out[offset + i] = UInt8(truncatingIfNeeded: a.value >> (24 - 8 * i)) }
            return 4
        case let .v6(a):
            for i in 0 ..< 8 {
                out[offset + i] = UInt8(truncatingIfNeeded: a.high >> (56 - 8 * i))
                out[offset + 8 + i] = UInt8(truncatingIfNeeded: a.low >> (56 - 8 * i))
            }
            return 6
        }
    }

    private static func load(_ bytes: UnsafeRawBufferPointer, at offset: Int, family: UInt8) -> IPAddress? {
        switch family {
        case 4: return .v4(IPv4Address((0 ..< 4).reduce(0) { $0 << 8 | UInt32(bytes[offset + $1]) }))
        case 6:
            let high = (0 ..< 8).reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[offset + $1]) }
            let low = (0 ..< 8).reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[offset + 8 + $1]) }
            return .v6(IPv6Address(high: high, low: low))
        default: return nil
        }
    }
}
