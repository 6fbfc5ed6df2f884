internal import Sys
internal import Wire

/// `run --tun --exclude PREFIX`: destinations whose packets skip Sluice's TUN
/// in whole-host mode and go out as if Sluice were not there (the LAN, the
/// address an SSH session comes from), as tun2proxy's `--bypass` and
/// sing-box's excluded routes do. A policy rule each, ahead of Sluice's
/// own: `to PREFIX lookup main`.
public struct ExcludedPrefix: Sendable, Equatable, CustomStringConvertible {
    public let address: String
    public let length: UInt8

    /// `10.0.0.0/8`, `192.0.2.7` (one address), `fd00::/8`; a prefix with
    /// host bits set is refused with the prefix it probably meant.
    public static func parse(_ text: String) -> Result<ExcludedPrefix, UsageError> {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(String(parts[0])) else {
            return .failure(UsageError("sluice run: --exclude wants an address or a prefix, such as 192.168.1.0/24, 192.0.2.7 or fd00::/8; got '\(text)'"))
        }
        let bits: Int
        switch address {
        case .v4: bits = 32
        case .v6: bits = 128
        }
        var length = bits
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0 ... bits).contains(given) else {
                return .failure(UsageError("sluice run: --exclude \(text): the prefix length must be 0 to \(bits)"))
            }
            length = given
        }
        let network = Self.network(address, length: length)
        guard network == address else {
            return .failure(UsageError("sluice run: --exclude \(text) has bits set past its length; did you mean \(network)/\(length)?"))
        }
        return .success(ExcludedPrefix(address: address.description, length: UInt8(length)))
    }

    /// The address with every bit past `length` cleared.
    static func network(_ address: IPAddress, length: Int) -> IPAddress {
        switch address {
        case let .v4(a):
            let mask: UInt32 = length == 0 ? 0 : ~0 << (32 - length)
            return .v4(IPv4Address(a.value & mask))
        case let .v6(a):
            let highMask: UInt64 = length == 0 ? 0 : length >= 64 ? ~0 : ~0 << (64 - length)
            let lowMask: UInt64 = length <= 64 ? 0 : length == 128 ? ~0 : ~0 << (128 - length)
            return .v6(IPv6Address(high: a.high & highMask, low: a.low & lowMask))
        }
    }

    func rule(priority: UInt32) -> SysRule {
        SysRule(destination: IPAddress(address)!.sysAddress, length: length, table: SysRule.mainTable, priority: priority)
    }

    public var description: String { "\(address)/\(length)" }
}
