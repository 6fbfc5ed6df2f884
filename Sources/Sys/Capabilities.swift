// Capabilities exists so that exec, run and dump can say at once that they
// lack the privilege to make namespaces and TUNs, before anything else (a
// control socket under /run, a capture file) fails on the way with a
// message that names only its own symptom.

/// The calling process's effective capabilities, from /proc/self/status.
public struct Capabilities: Equatable, Sendable {
    public var effective: UInt64

    public static let networkAdministration = (bit: 12, name: "CAP_NET_ADMIN")
    public static let systemAdministration = (bit: 21, name: "CAP_SYS_ADMIN")

    public init(effective: UInt64) { self.effective = effective }

    /// This process's, or nil when /proc cannot tell (then nobody should guess).
    public static func current() -> Capabilities? {
        guard let bytes = Files.read("/proc/self/status") else { return nil }
        return parse(status: String(decoding: bytes, as: UTF8.self))
    }

    /// The `CapEff:` line of a /proc/PID/status text.
    public static func parse(status: String) -> Capabilities? {
        for line in status.split(separator: "\n") where line.hasPrefix("CapEff:") {
            let hex = line.dropFirst("CapEff:".count).filter { $0 != " " && $0 != "\t" }
            return UInt64(hex, radix: 16).map(Capabilities.init(effective:))
        }
        return nil
    }

    /// The names of `wanted` that this set lacks, in order.
    public func missing(_ wanted: [(bit: Int, name: String)]) -> [String] {
        wanted.filter { effective & (1 << UInt64($0.bit)) == 0 }.map(\.name)
    }
}
