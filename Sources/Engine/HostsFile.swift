internal import Stack
internal import Sys
internal import Wire

/// The names the host knows without DNS: /etc/hosts, and `localhost` (RFC
/// 6761 §6.3: loopback, whatever a resolver says). The host's own programs
/// look there first (glibc's "files" before "dns"); `sluice proxy` asked
/// only the resolvers, so `curl -x <sluice proxy> http://localhost:3000/`
/// got a 504, as did every name /etc/hosts alone knows.
struct HostsFile {
    /// Lowercase names without a trailing dot, each with its addresses in file order.
    private(set) var addresses: [String: [IPAddress]] = [:]

    static let loopback: [IPAddress] = [IPAddress("127.0.0.1")!, IPAddress("::1")!]

    /// hosts(5): an address, then its names; `#` starts a comment.
    init(text: String) {
        for line in text.split(separator: "\n") {
            let fields = line.prefix { $0 != "#" }.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, let address = IPAddress(String(fields[0])) else { continue }
            for name in fields.dropFirst() {
                let key = Self.key(String(name))
                if !(addresses[key]?.contains(address) ?? false) { addresses[key, default: []].append(address) }
            }
        }
    }

    /// The host's /etc/hosts (none: just localhost).
    static func system() -> HostsFile {
        HostsFile(text: Files.read("/etc/hosts", limit: 1 << 20).map { String(decoding: $0, as: UTF8.self) } ?? "")
    }

    static func key(_ name: String) -> String {
        var key = name.lowercased()
        if key.hasSuffix(".") { key.removeLast() }
        return key
    }

    /// `name`'s address in `family` if it has one, else its first; nil when the file does not know it.
    func address(of name: String, family: SysIPAddress.Family) -> IPAddress? {
        let key = Self.key(name)
        let known = addresses[key] ?? (key == "localhost" || key.hasSuffix(".localhost") ? Self.loopback : nil)
        guard let known else { return nil }
        return known.first { $0.sysAddress.family == family } ?? known.first
    }
}
