// SysIPAddress exists because Sys may not import Wire, yet netlink needs
// addresses: this is the smallest value that can carry one to the kernel
// (no heap storage), with text conversion by inet_pton/inet_ntop.
import Glibc

public enum SysIPAddress: Sendable, Hashable {
    /// In host byte order: 10.77.0.1 is 0x0A4D_0001.
    case v4(UInt32)
    /// The 16 bytes as two host-order halves: fd00:77::1 is (0xFD00_0077_0000_0000, 1).
    case v6(high: UInt64, low: UInt64)

    public enum Family: Sendable, Hashable {
        case v4, v6
        /// AF_INET or AF_INET6.
        public var addressFamily: UInt8 {
            switch self {
            case .v4: return UInt8(AF_INET)
            case .v6: return UInt8(AF_INET6)
            }
        }
        public var bitCount: UInt8 {
            switch self {
            case .v4: return 32
            case .v6: return 128
            }
        }
    }

    public var family: Family {
        switch self {
        case .v4: return .v4
        case .v6: return .v6
        }
    }

    public static let anyV4 = SysIPAddress.v4(0)
    public static let anyV6 = SysIPAddress.v6(high: 0, low: 0)

    /// Network-order bytes, 4 or 16 of them.
    public init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4:
            self = .v4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
        case 16:
            let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            self = .v6(high: high, low: low)
        default:
            return nil
        }
    }

    /// "10.77.0.1" or "fd00:77::1".
    public init?(_ text: String) {
        var storage = (UInt64(0), UInt64(0))
        let parsed: SysIPAddress? = withUnsafeMutableBytes(of: &storage) { raw in
            if inet_pton(AF_INET, text, raw.baseAddress) == 1 {
                return .v4(UInt32(bigEndian: raw.load(as: UInt32.self)))
            }
            if inet_pton(AF_INET6, text, raw.baseAddress) == 1 {
                return .v6(
                    high: UInt64(bigEndian: raw.load(fromByteOffset: 0, as: UInt64.self)),
                    low: UInt64(bigEndian: raw.load(fromByteOffset: 8, as: UInt64.self)))
            }
            return nil
        }
        guard let parsed else { return nil }
        self = parsed
    }

    /// Calls `body` with the address in network byte order (4 or 16 bytes).
    public func withNetworkBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        switch self {
        case .v4(let value):
            var big = value.bigEndian
            return try withUnsafeBytes(of: &big) { (bytes) throws(E) -> R in try body(bytes) }
        case .v6(let high, let low):
            var big = (high.bigEndian, low.bigEndian)
            return try withUnsafeBytes(of: &big) { (bytes) throws(E) -> R in try body(bytes) }
        }
    }
}

extension SysIPAddress: CustomStringConvertible {
    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = Int32(self.family.addressFamily)
        let ok = withNetworkBytes { bytes in
            inet_ntop(family, bytes.baseAddress, &text, socklen_t(text.count)) != nil
        }
        guard ok else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
