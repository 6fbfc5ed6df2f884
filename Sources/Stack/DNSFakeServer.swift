public import Wire

/// How names the profile does not list are resolved.
public enum DNSMode: Sendable, Equatable {
    /// Answer A/AAAA with addresses from the fake-IP pool (Surge's and Clash's
    /// "fake-ip"): the rule engine then sees the name, and proxies receive it.
    case fakeIP
    /// Relay every query to the host's resolvers.
    case forward
}

/// What AAAA queries get in fake-IP mode.
public enum DNSAAAAPolicy: Sendable, Equatable {
    /// A fake IPv6 address at the same offset as the name's IPv4 fake.
    case fake
    /// NOERROR with no answer, so that apps use IPv4 (for hosts whose IPv6
    /// route does not reach the TUN, or profiles with ipv6 = false): in both
    /// modes, [Host] names included.
    case empty
}

public struct FakeDNSConfiguration: Sendable {
    public var mode: DNSMode
    /// TTL of fake answers. One second: an app that honours it asks again
    /// before every new connection, so it never holds an address the pool
    /// has since recycled, and the query costs nothing (it is answered from
    /// memory). Zero would be cleaner but some stub caches treat 0 as "do not
    /// use", breaking the connection that follows.
    public var fakeTimeToLive: UInt32
    /// TTL of [Host] answers, which are real and change only with the profile.
    public var hostTimeToLive: UInt32
    public var aaaaPolicy: DNSAAAAPolicy
    /// The profile's [Host] section.
    public var hosts: DNSHostTable
    /// Names forwarded even in fake-IP mode: local names, and anything an app
    /// must see the real address of.
    public var exclusions: DNSNameSet
    /// Forward names of one label ("printer", "localhost"): they are LAN names
    /// that only the host's resolver (or its search list) knows.
    public var forwardsSingleLabelNames: Bool
    public var pool: FakeIPPoolConfiguration

    public static let defaultExclusions: DNSNameSet = ["localhost", "*.localhost", "*.local", "*.lan", "*.internal"]

    public init(mode: DNSMode = .fakeIP, fakeTimeToLive: UInt32 = 1, hostTimeToLive: UInt32 = 60,
                aaaaPolicy: DNSAAAAPolicy = .fake, hosts: DNSHostTable = DNSHostTable(),
                exclusions: DNSNameSet = defaultExclusions, forwardsSingleLabelNames: Bool = true,
                pool: FakeIPPoolConfiguration = FakeIPPoolConfiguration()) {
        self.mode = mode
        self.fakeTimeToLive = fakeTimeToLive
        self.hostTimeToLive = hostTimeToLive
        self.aaaaPolicy = aaaaPolicy
        self.hosts = hosts
        self.exclusions = exclusions
        self.forwardsSingleLabelNames = forwardsSingleLabelNames
        self.pool = pool
    }
}

/// What to do with one DNS message sent to the TUN's DNS address.
public enum DNSAction: Equatable, Sendable, CustomStringConvertible {
    /// A response of this many bytes is at the start of the caller's buffer.
    case answer(length: Int)
    /// Relay the query unchanged to the host's resolvers.
    case forward
    /// Send nothing: a response (never answer one, lest two servers loop), a
    /// message too short to carry an id, or a buffer too small for any reply.
    case drop

    public var description: String {
        switch self {
        case let .answer(length): return "answer (\(length))"
        case .forward: return "forward"
        case .drop: return "drop"
        }
    }
}

/// The DNS server on the TUN: answers from the [Host] table and the fake-IP
/// pool, says which queries to forward, and refuses the rest with the RCODE
/// RFC 1035 gives. Pure: time comes in as `now`.
///
/// Responses carry no OPT record (Sluice does not speak EDNS), so they are
/// held to `maximumLength` (512 for UDP, RFC 1035 §4.2.1); an answer that does
/// not fit is replaced by the question alone with TC set, and the client
/// retries over TCP, where the engine passes a larger limit.
public struct FakeDNS: Sendable {
    public static let udpLimit = 512

    /// Mutable so a profile reload can replace the static hosts.
    public var configuration: FakeDNSConfiguration
    /// The engine pins, unpins and looks up flows' destinations here.
    public var pool: FakeIPPool

    public init(_ configuration: FakeDNSConfiguration = FakeDNSConfiguration()) {
        self.configuration = configuration
        pool = FakeIPPool(configuration.pool)
    }

    /// Handles the raw payload of a datagram: a message that does not parse
    /// but has a header gets FORMERR with no question.
    public mutating func respond(toMessage bytes: UnsafeRawBufferPointer, now: Instant,
                                 into buffer: UnsafeMutableRawBufferPointer,
                                 maximumLength: Int = udpLimit) -> DNSAction {
        guard let header = try? DNSHeader.parse(bytes), !header.isResponse else { return .drop }
        do {
            let query = try DNSMessageView(bytes)
            return respond(to: query, now: now, into: buffer, maximumLength: maximumLength)
        } catch {
            return headerOnly(header, .formatError, into: Self.window(buffer, maximumLength))
        }
    }

    /// Handles one parsed query. `buffer` must not overlap `query.bytes`.
    public mutating func respond(to query: DNSMessageView, now: Instant,
                                 into buffer: UnsafeMutableRawBufferPointer,
                                 maximumLength: Int = udpLimit) -> DNSAction {
        let header = query.header
        guard !header.isResponse else { return .drop }
        let out = Self.window(buffer, maximumLength)
        // RFC 1035 §4.1.1: NOTIMP for a kind of query we do not support.
        guard header.opcode == .query else {
            guard header.questionCount == 1 else { return headerOnly(header, .notImplemented, into: out) }
            return write(query, .notImplemented, [], into: out)
        }
        // A standard query asks exactly one question (RFC 9619); anything else is malformed.
        guard header.questionCount == 1, let question = query.question else {
            return headerOnly(header, .formatError, into: out)
        }
        // Whatever happens below, at least the truncated form (the question alone) will fit.
        guard out.count >= DNSHeader.length + question.name.wireLength + 4 else { return .drop }
        switch question.type {
        case .opt:
            // OPT belongs in the additional section only (RFC 6891 §6.1.1).
            return write(query, .formatError, [], into: out)
        case DNSType(rawValue: 251), DNSType(rawValue: 252), DNSType(rawValue: 253), DNSType(rawValue: 254):
            // IXFR, AXFR, MAILB, MAILA: zone transfers and obsolete mail queries.
            return write(query, .notImplemented, [], into: out)
        default:
            break
        }
        guard question.class == .internet else {
            // CHAOS and HS belong to whatever the host's resolvers are; fake-IP has no answer in them.
            return configuration.mode == .forward ? .forward : write(query, .notImplemented, [], into: out)
        }
        // IPv6 off (Surge's ipv6 = false): no AAAA from anywhere, in either mode.
        if question.type == .aaaa, configuration.aaaaPolicy == .empty { return write(query, .noError, [], into: out) }
        if let resolution = configuration.hosts.resolve(question.name) {
            return answerFromHosts(query, question.type, resolution, now: now, into: out)
        }
        guard configuration.mode == .fakeIP else { return .forward }
        if configuration.forwardsSingleLabelNames, Self.labelCount(question.name.labels) <= 1 { return .forward }
        if configuration.exclusions.contains(question.name) { return .forward }
        if let address = DNSReverseName.address(question.name), pool.contains(address) {
            guard question.type == .ptr || question.type == .any else { return write(query, .noError, [], into: out) }
            guard let name = pool.lookup(address, now: now) else { return write(query, .nameError, [], into: out) }
            return write(query, .noError, [Record(owner: nil, data: .ptr(name), timeToLive: configuration.fakeTimeToLive)],
                         into: out)
        }
        // Reverse zones of real addresses, ipv4only.arpa (a fake AAAA there
        // would pass for a NAT64 prefix, RFC 7050), home.arpa: the host knows.
        if DNSReverseName.isUnderArpa(question.name.labels) { return .forward }
        return answerFake(query, question.type, DNSName(question.name), owner: nil, prefix: [], now: now, into: out)
    }

    // MARK: Answers

    struct Record {
        /// Nil: the question's name.
        var owner: DNSName?
        var data: DNSResourceData
        var timeToLive: UInt32
    }

    /// Fake A/AAAA for `name`, after `prefix` (CNAMEs leading to it). Types other
    /// than A, AAAA and ANY get NOERROR and no answer: an HTTPS/SVCB record
    /// would hand apps real alternative addresses and ECH keys that bypass the
    /// fake address, and MX/TXT/SRV have no fake form.
    private mutating func answerFake(_ query: DNSMessageView, _ type: DNSType, _ name: DNSName, owner: DNSName?,
                                     prefix: [Record], now: Instant,
                                     into out: UnsafeMutableRawBufferPointer) -> DNSAction {
        let wantsV4 = type == .a || type == .any
        let wantsV6 = (type == .aaaa || type == .any) && configuration.aaaaPolicy == .fake
        guard wantsV4 || wantsV6 else { return write(query, .noError, prefix, into: out) }
        guard let addresses = pool.allocate(name, now: now) else {
            // Every address is pinned by an open flow: refuse rather than break one.
            return write(query, .serverFailure, [], into: out)
        }
        var records = prefix
        let ttl = configuration.fakeTimeToLive
        if wantsV4 { records.append(Record(owner: owner, data: .a(addresses.v4), timeToLive: ttl)) }
        if wantsV6 { records.append(Record(owner: owner, data: .aaaa(addresses.v6), timeToLive: ttl)) }
        return write(query, .noError, records, into: out)
    }

    private mutating func answerFromHosts(_ query: DNSMessageView, _ type: DNSType,
                                          _ resolution: Result<DNSHostTable.Resolution, DNSHostTable.AliasLoop>,
                                          now: Instant, into out: UnsafeMutableRawBufferPointer) -> DNSAction {
        guard case let .success(resolution) = resolution else { return write(query, .serverFailure, [], into: out) }
        let ttl = configuration.hostTimeToLive
        var records: [Record] = []
        var owner: DNSName?
        for target in resolution.aliases {
            records.append(Record(owner: owner, data: .cname(target), timeToLive: ttl))
            owner = target
        }
        if type == .cname { return write(query, .noError, Array(records.prefix(1)), into: out) }
        guard let addresses = resolution.addresses else {
            // The chain leaves the table at `owner`: resolve that name as any other.
            guard let last = owner, configuration.mode == .fakeIP, !configuration.exclusions.contains(last) else {
                return .forward
            }
            return answerFake(query, type, last, owner: last, prefix: records, now: now, into: out)
        }
        for address in addresses {
            switch address {
            case let .v4(v4) where type == .a || type == .any:
                records.append(Record(owner: owner, data: .a(v4), timeToLive: ttl))
            // IPv6 off: not through ANY either (AAAA questions were answered empty above).
            case let .v6(v6) where type == .aaaa || type == .any && configuration.aaaaPolicy == .fake:
                records.append(Record(owner: owner, data: .aaaa(v6), timeToLive: ttl))
            case .v4, .v6:
                continue
            }
        }
        return write(query, .noError, records, into: out)
    }

    // MARK: Writing

    /// The response with `records`, or the question alone with TC set when they do not fit.
    private func write(_ query: DNSMessageView, _ responseCode: DNSResponseCode, _ records: [Record],
                       into out: UnsafeMutableRawBufferPointer) -> DNSAction {
        do throws(WireError) {
            var writer = try DNSMessageWriter(respondingTo: query, into: out, responseCode: responseCode)
            for record in records {
                if let owner = record.owner {
                    try writer.appendAnswer(name: owner, record.data, timeToLive: record.timeToLive)
                } else {
                    try writer.appendAnswer(record.data, timeToLive: record.timeToLive)
                }
            }
            return .answer(length: writer.length)
        } catch {
            return truncated(query, responseCode, into: out)
        }
    }

    private func truncated(_ query: DNSMessageView, _ responseCode: DNSResponseCode,
                           into out: UnsafeMutableRawBufferPointer) -> DNSAction {
        guard let question = query.question else { return .drop }
        var header = Self.responseHeader(query.header, responseCode)
        header.truncated = true
        do throws(WireError) {
            var writer = try DNSMessageWriter(into: out, header: header)
            try writer.appendQuestion(question.name, type: question.type, class: question.class)
            return .answer(length: writer.length)
        } catch {
            return .drop
        }
    }

    private func headerOnly(_ query: DNSHeader, _ responseCode: DNSResponseCode,
                            into out: UnsafeMutableRawBufferPointer) -> DNSAction {
        guard let writer = try? DNSMessageWriter(into: out, header: Self.responseHeader(query, responseCode)) else {
            return .drop
        }
        return .answer(length: writer.length)
    }

    static func responseHeader(_ query: DNSHeader, _ responseCode: DNSResponseCode) -> DNSHeader {
        DNSHeader(id: query.id, isResponse: true, opcode: query.opcode, authoritativeAnswer: false,
                  recursionDesired: query.recursionDesired, recursionAvailable: true,
                  checkingDisabled: query.checkingDisabled, responseCode: responseCode)
    }

    static func window(_ buffer: UnsafeMutableRawBufferPointer, _ maximumLength: Int) -> UnsafeMutableRawBufferPointer {
        buffer.sub(0, max(0, min(buffer.count, maximumLength)))
    }

    static func labelCount(_ labels: DNSLabelSequence) -> Int {
        var count = 0
        for _ in labels { count += 1 }
        return count
    }
}
