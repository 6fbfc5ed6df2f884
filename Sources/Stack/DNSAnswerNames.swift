public import Wire

/// Names for real addresses, learned from the DNS answers that pass through
/// Sluice when it does not hand out fake IPs (forward mode, the host's own
/// DNS relayed like any UDP, [Host] entries Sluice answers itself): a flow to such an address that names itself no
/// other way (no SNI, no Host: SSH, a game's UDP) is then offered the name
/// the app asked for. An address can stand for several names (a CDN), and the
/// latest answer wins, so this is a fallback, never ahead of the flow's own
/// SNI or Host. Entries live for the answer's TTL, at least a minute (apps
/// keep addresses past short TTLs) and at most an hour, and the map holds at
/// most `capacity` of them.
public struct DNSAnswerNames: Sendable {
    public static let defaultCapacity = 16384
    static let shortestLife: Int64 = 60_000_000_000
    static let longestLife: Int64 = 3_600_000_000_000

    public let capacity: Int
    private var names: [IPAddress: (name: String, expires: Instant)] = [:]

    public init(capacity: Int = DNSAnswerNames.defaultCapacity) { self.capacity = capacity }

    public var count: Int { names.count }

    /// The name an unexpired answer gave `address`.
    public func name(for address: IPAddress, now: Instant) -> String? {
        guard let entry = names[address], now < entry.expires else { return nil }
        return entry.name
    }

    /// A DNS response: each A and AAAA answer names its address (those `keep` accepts).
    public mutating func learn(message bytes: UnsafeRawBufferPointer, now: Instant, keep: (IPAddress) -> Bool = { _ in true }) {
        guard let (name, addresses) = Self.answers(in: bytes) else { return }
        for (address, timeToLive) in addresses where keep(address) {
            let life = min(max(Int64(timeToLive) * 1_000_000_000, Self.shortestLife), Self.longestLife)
            if names[address] == nil, names.count >= capacity {
                names = names.filter { now < $0.value.expires }
                // Still full of live names: the newest answer goes without.
                if names.count >= capacity { continue }
            }
            names[address] = (name, now.advanced(byNanoseconds: life))
        }
    }

    /// A response's question name (lowercased, no trailing dot: what the app
    /// asked for, CNAMEs aside) and its A and AAAA answers with their TTLs;
    /// nil for a query, a response without a question, or one that is not DNS.
    public static func answers(in bytes: UnsafeRawBufferPointer) -> (name: String, addresses: [(IPAddress, UInt32)])? {
        guard let message = try? DNSMessageView(bytes), message.header.isResponse,
              let question = message.question else { return nil }
        var name = question.name.description.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.isEmpty else { return nil }
        var addresses: [(IPAddress, UInt32)] = []
        for record in message.answers {
            switch record.data {
            case let .a(v4): addresses.append((.v4(v4), record.timeToLive))
            case let .aaaa(v6): addresses.append((.v6(v6), record.timeToLive))
            case .cname, .ptr, .other: continue
            }
        }
        return (name, addresses)
    }
}
