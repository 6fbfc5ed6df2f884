public import Wire

/// Rebuilds the whole datagrams the app sent in fragments (IPv4, RFC 791 §3.2;
/// IPv6 fragment headers, RFC 8200 §4.5), so that the engine only ever sees
/// whole datagrams.
///
/// It is a table, like `TCPFlowTable`: time comes in as an `Instant`, nothing
/// reads a clock, and every limit is counted in `counters`. Fragments are rare,
/// so each datagram in reassembly gets its own buffers; what keeps that from
/// growing without bound is `Configuration`. docs/fragments.md says what is
/// accepted and why.
public final class FragmentReassembler {
    public struct Configuration: Sendable, Equatable {
        /// Bytes held across every datagram in reassembly (data so far and the
        /// first fragment's header). A fragment that would go past it evicts the
        /// oldest other datagrams first.
        public var maximumMemory = 4 << 20
        /// Datagrams in reassembly at once; a new one past it evicts the oldest.
        public var maximumDatagrams = 256
        /// Fragments kept for one datagram. 65,535 bytes in 8-byte pieces would
        /// be 8,192 of them; no real sender fragments that finely (a 1280-byte
        /// MTU makes 54), and each one costs bookkeeping.
        public var maximumFragmentsPerDatagram = 128
        /// How long a partial datagram may wait, from its first fragment. 30 s is
        /// Linux's ipfrag_time; RFC 8200 says 60 s and RFC 791 suggests 15 s.
        /// The app's fragments cross no network on the way to the TUN, so they
        /// arrive together or not at all: a shorter wait only frees memory sooner.
        public var timeout: Duration = .seconds(30)

        public init() {}
    }

    /// No reassembled datagram may be longer: IPv4's total length and IPv6's
    /// payload length are 16 bits.
    public static let maximumDatagramLength = 65535

    /// What identifies the fragments of one datagram.
    public struct Key: Hashable, Sendable, CustomStringConvertible {
        public var source: IPAddress
        public var destination: IPAddress
        /// IPv4's protocol field (RFC 791). Nil for IPv6: RFC 8200 §4.5 keys on
        /// addresses and identification only, and the next header of any but the
        /// first fragment may differ without meaning anything.
        public var `protocol`: IPProtocol?
        public var identification: UInt32

        public init(source: IPAddress, destination: IPAddress, protocol proto: IPProtocol?, identification: UInt32) {
            self.source = source
            self.destination = destination
            self.protocol = proto
            self.identification = identification
        }

        /// `10.0.0.1 > 10.0.0.2 ICMP id 4660`, `fd00::1 > fd00::2 id 0xe7d21cea`
        public var description: String {
            if let proto = self.protocol { return "\(source) > \(destination) \(proto) id \(identification)" }
            return "\(source) > \(destination) id 0x" + String(identification, radix: 16)
        }
    }

    public enum Outcome: CustomStringConvertible {
        /// A whole datagram: use the packet as it is.
        case notAFragment
        /// A fragment held until the rest arrives.
        case incomplete
        /// The last missing fragment arrived (or an IPv6 atomic fragment, RFC 6946,
        /// which is whole by itself): the datagram, rebuilt.
        case complete(ReassembledDatagram)
        case dropped(DropReason)

        public var description: String {
            switch self {
            case .notAFragment: return "not a fragment"
            case .incomplete: return "incomplete"
            case let .complete(datagram): return "complete: \(datagram)"
            case let .dropped(reason): return "dropped: \(reason)"
            }
        }
    }

    public enum DropReason: Sendable, Equatable, CustomStringConvertible {
        // The fragment alone is dropped; the datagram it belongs to carries on.

        /// The same bytes at the same place again. Networks duplicate packets, so
        /// this is no attack (RFC 8200 §4.5 lets exact duplicates be dropped quietly).
        case duplicate
        /// Empty, or a fragment with more to follow whose length is not a multiple
        /// of 8 (RFC 791, RFC 8200 §4.5).
        case badLength
        /// Its end would make the datagram longer than 65,535 bytes (the ping of
        /// death). Found only at completion (the first fragment's header longer
        /// than the last one's), it takes the datagram with it.
        case tooLong
        /// A first fragment without the whole upper-layer header (RFC 8200 §4.5,
        /// RFC 7112; for IPv4, RFC 1858's tiny-fragment attack).
        case tinyFirstFragment

        // The whole datagram is discarded with every fragment held for it.

        /// Overlapping fragments: for IPv6 any overlap but an exact duplicate
        /// (RFC 5722); for IPv4 an overlap whose bytes disagree.
        case overlap
        /// Fragments disagree about where the datagram ends.
        case inconsistentLength
        /// More than `maximumFragmentsPerDatagram`.
        case tooManyFragments
        /// This datagram alone needs more than `maximumMemory`.
        case memoryLimit
        /// The rebuilt datagram does not parse (a fragment header nested inside, say).
        case malformed

        /// True when the datagram the fragment belonged to is gone too.
        public var discardsDatagram: Bool {
            switch self {
            case .duplicate, .badLength, .tooLong, .tinyFirstFragment: return false
            case .overlap, .inconsistentLength, .tooManyFragments, .memoryLimit, .malformed: return true
            }
        }

        public var description: String {
            switch self {
            case .duplicate: return "duplicate fragment"
            case .badLength: return "bad fragment length"
            case .tooLong: return "datagram longer than 65535"
            case .tinyFirstFragment: return "first fragment without the upper-layer header"
            case .overlap: return "overlapping fragments"
            case .inconsistentLength: return "inconsistent datagram length"
            case .tooManyFragments: return "too many fragments"
            case .memoryLimit: return "datagram larger than the memory limit"
            case .malformed: return "malformed reassembled datagram"
            }
        }
    }

    public struct Counters: Sendable, Equatable {
        /// Fragments offered to `insert` (atomic fragments not included).
        public var fragments = 0
        /// Datagrams rebuilt from fragments.
        public var reassembled = 0
        public var atomicFragments = 0
        // Fragments dropped alone, by reason.
        public var duplicates = 0
        public var badLengths = 0
        public var tooLong = 0
        public var tinyFirstFragments = 0
        // Datagrams discarded, by reason.
        public var overlaps = 0
        public var inconsistentLengths = 0
        public var tooManyFragments = 0
        public var overMemoryLimit = 0
        public var malformed = 0
        /// Older datagrams evicted to make room under `maximumMemory`.
        public var evictedForMemory = 0
        /// Older datagrams evicted to stay within `maximumDatagrams`.
        public var evictedForCount = 0
        /// Datagrams that waited longer than `timeout`.
        public var timedOut = 0
        /// ICMP time exceeded (code 1) messages written by `expire(now:sendingTimeExceededTo:)`.
        public var timeExceededSent = 0

        public init() {}
    }

    /// One datagram in reassembly.
    final class Entry {
        /// Creation order: the oldest has the smallest, and ties never happen.
        let serial: Int
        let firstArrival: Instant
        /// The fragmentable part so far, as long as the furthest fragment's end.
        var data: [UInt8] = []
        /// The fragments kept, each as the data range it covered, sorted by start.
        var ranges: [Range<Int>] = []
        /// Set by the last fragment (the one without "more fragments").
        var totalLength: Int?
        /// The offset-0 fragment's header as received: IPv4's whole header, or
        /// IPv6's unfragmentable part followed by the fragment header.
        var firstHeader: [UInt8]?
        var firstDataLength = 0
        /// IPv6: the first fragment's fragment header's next header, and the
        /// offset in `firstHeader` of the next-header field that names the fragment header.
        var firstNextHeader: UInt8 = 0
        var nextHeaderField = 0

        init(serial: Int, firstArrival: Instant) {
            self.serial = serial
            self.firstArrival = firstArrival
        }

        var memory: Int { data.count + (firstHeader?.count ?? 0) }
    }

    /// One fragment, with both versions' fields in one shape.
    struct Piece {
        var key: Key
        var isIPv6: Bool
        var offset: Int
        var data: UnsafeRawBufferPointer
        var moreFragments: Bool
        /// What a first fragment's `firstHeader` would be.
        var header: UnsafeRawBufferPointer
        /// The bytes the reassembled datagram's length field counts besides the
        /// data: IPv4's header, IPv6's extension headers before the fragment header.
        var lengthFieldOverhead: Int
        /// For an offset-0 fragment: whether the upper-layer header is all there.
        var holdsUpperLayerHeader: Bool
        var nextHeader: UInt8
        var nextHeaderField: Int
    }

    public let configuration: Configuration
    public private(set) var counters = Counters()
    /// Bytes held now, as `maximumMemory` counts them.
    public private(set) var memoryInUse = 0
    var entries: [Key: Entry] = [:]
    var nextSerial = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Datagrams in reassembly.
    public var count: Int { entries.count }

    /// When `expire` next has something to do, if anything is waiting.
    public var nextDeadline: Instant? {
        var earliest: Instant? = nil
        for entry in entries.values where earliest.map({ entry.firstArrival < $0 }) ?? true {
            earliest = entry.firstArrival
        }
        return earliest.map { $0 + configuration.timeout }
    }

    // MARK: Input

    /// Takes one datagram the app sent.
    public func insert(_ packet: IPPacketView, now: Instant) -> Outcome {
        let piece: Piece
        switch packet.network {
        case let .v4(ip):
            guard ip.isFragment else { return .notAFragment }
            piece = Piece(key: Key(source: .v4(ip.source), destination: .v4(ip.destination), protocol: ip.protocol,
                                   identification: UInt32(ip.identification)),
                          isIPv6: false, offset: ip.fragmentByteOffset, data: ip.payload,
                          moreFragments: ip.moreFragments, header: ip.header, lengthFieldOverhead: ip.headerLength,
                          holdsUpperLayerHeader: ip.payload.count >= IPv6HeaderChain.minimumUpperLayerHeader(ip.protocol),
                          nextHeader: 0, nextHeaderField: 0)
        case let .v6(ip):
            guard let at = ip.fragmentHeaderOffset, let fragment = ip.fragment else { return .notAFragment }
            guard let field = IPv6HeaderChain.nextHeaderField(before: at, in: ip.bytes) else {
                return discarded(nil, .malformed)
            }
            guard fragment.isFragment else { return atomic(ip, fragmentHeaderOffset: at, nextHeaderField: field) }
            // For a first fragment the view walked on past the fragment header to the upper layer.
            let minimum = IPv6HeaderChain.minimumUpperLayerHeader(ip.upperLayerProtocol)
            piece = Piece(key: Key(source: .v6(ip.source), destination: .v6(ip.destination), protocol: nil,
                                   identification: fragment.identification),
                          isIPv6: true, offset: fragment.fragmentByteOffset,
                          data: ip.bytes.suffix(from: at + IPv6FragmentHeader.length),
                          moreFragments: fragment.moreFragments,
                          header: ip.bytes.sub(0, at + IPv6FragmentHeader.length),
                          lengthFieldOverhead: at - IPv6View.headerLength,
                          holdsUpperLayerHeader: ip.upperLayerOffset + minimum <= ip.bytes.count,
                          nextHeader: fragment.nextHeader.rawValue, nextHeaderField: field)
        }
        counters.fragments += 1
        return insert(piece, now: now)
    }

    func insert(_ piece: Piece, now: Instant) -> Outcome {
        let start = piece.offset, end = piece.offset + piece.data.count
        guard end > start, !piece.moreFragments || piece.data.count % 8 == 0 else { return dropped(.badLength) }
        guard piece.lengthFieldOverhead + end <= Self.maximumDatagramLength else { return dropped(.tooLong) }
        if start == 0, !piece.holdsUpperLayerHeader { return dropped(.tinyFirstFragment) }

        let key = piece.key
        let entry: Entry
        if let existing = entries[key], now - existing.firstArrival < configuration.timeout {
            entry = existing
        } else {
            if entries[key] != nil {
                // Its time ran out before `expire` came round: it is not this fragment's datagram.
                remove(key)
                counters.timedOut += 1
            }
            while entries.count >= max(1, configuration.maximumDatagrams), evictOldest(sparing: key) {
                counters.evictedForCount += 1
            }
            entry = Entry(serial: nextSerial, firstArrival: now)
            nextSerial += 1
            entries[key] = entry
        }

        // Where the datagram ends must agree between fragments.
        if piece.moreFragments {
            if let total = entry.totalLength, end > total { return discarded(key, .inconsistentLength) }
        } else {
            if let total = entry.totalLength, total != end { return discarded(key, .inconsistentLength) }
            if entry.data.count > end { return discarded(key, .inconsistentLength) }
        }

        // Overlaps. The ranges are sorted by start, so one pass also finds
        // whether the new range is already covered (an IPv4 duplicate).
        var covered = start
        for range in entry.ranges where range.overlaps(start ..< end) {
            let same = Self.agree(entry.data, range.clamped(to: start ..< end), piece.data, at: start)
            if piece.isIPv6 {
                // RFC 5722: any overlap discards the datagram; RFC 8200 §4.5 lets
                // an exact duplicate go quietly instead.
                guard range == start ..< end, same else { return discarded(key, .overlap) }
                return dropped(.duplicate)
            }
            guard same else { return discarded(key, .overlap) }
            if range.lowerBound <= covered { covered = max(covered, range.upperBound) }
        }
        if covered >= end { return dropped(.duplicate) }
        guard entry.ranges.count < configuration.maximumFragmentsPerDatagram else {
            return discarded(key, .tooManyFragments)
        }

        let isNewFirst = start == 0 && entry.firstHeader == nil
        let growth = max(0, end - entry.data.count) + (isNewFirst ? piece.header.count : 0)
        // A datagram too large for the limit by itself must not evict the others first.
        guard entry.memory + growth <= configuration.maximumMemory else { return discarded(key, .memoryLimit) }
        while memoryInUse + growth > configuration.maximumMemory, evictOldest(sparing: key) {
            counters.evictedForMemory += 1
        }
        guard memoryInUse + growth <= configuration.maximumMemory else { return discarded(key, .memoryLimit) }

        if end > entry.data.count { entry.data.append(contentsOf: repeatElement(0, count: end - entry.data.count)) }
        entry.data.withUnsafeMutableBytes { $0.sub(start, end - start).copyMemory(from: piece.data) }
        let index = entry.ranges.firstIndex { $0.lowerBound > start } ?? entry.ranges.endIndex
        entry.ranges.insert(start ..< end, at: index)
        if isNewFirst {
            entry.firstHeader = Array(piece.header)
            entry.firstDataLength = piece.data.count
            entry.firstNextHeader = piece.nextHeader
            entry.nextHeaderField = piece.nextHeaderField
        }
        if !piece.moreFragments { entry.totalLength = end }
        memoryInUse += growth

        guard let total = entry.totalLength, let header = entry.firstHeader, Self.covers(entry.ranges, total) else {
            return .incomplete
        }
        remove(key)
        return rebuild(entry, header: header, dataLength: total, isIPv6: piece.isIPv6)
    }

    /// Whether `data[range]` equals the same bytes of a fragment placed at `start`.
    static func agree(_ data: [UInt8], _ range: Range<Int>, _ fragment: UnsafeRawBufferPointer, at start: Int) -> Bool {
        data.withUnsafeBytes { held in
            held.sub(range.lowerBound, range.count).elementsEqual(fragment.sub(range.lowerBound - start, range.count))
        }
    }

    /// Whether sorted `ranges` cover 0..<total without a hole.
    static func covers(_ ranges: [Range<Int>], _ total: Int) -> Bool {
        var reached = 0
        for range in ranges {
            if range.lowerBound > reached { return false }
            reached = max(reached, range.upperBound)
        }
        return reached >= total
    }

    // MARK: Output

    /// Lays the first fragment's header and the data out as one datagram.
    func rebuild(_ entry: Entry, header: [UInt8], dataLength: Int, isIPv6: Bool) -> Outcome {
        let fragmentCount = entry.ranges.count
        let storage: ReassembledDatagram.Storage
        if isIPv6 {
            let unfragmentable = header.count - IPv6FragmentHeader.length
            guard unfragmentable - IPv6View.headerLength + dataLength <= Self.maximumDatagramLength else {
                counters.tooLong += 1
                return .dropped(.tooLong)
            }
            storage = .init(count: unfragmentable + dataLength)
            let out = storage.bytes
            header.withUnsafeBytes { out.sub(0, unfragmentable).copyMemory(from: $0.sub(0, unfragmentable)) }
            entry.data.withUnsafeBytes { out.sub(unfragmentable, dataLength).copyMemory(from: $0.sub(0, dataLength)) }
            out.setU16(4, UInt16(unfragmentable - IPv6View.headerLength + dataLength))
            out.setU8(entry.nextHeaderField, entry.firstNextHeader)
        } else {
            guard header.count + dataLength <= Self.maximumDatagramLength else {
                counters.tooLong += 1
                return .dropped(.tooLong)
            }
            storage = .init(count: header.count + dataLength)
            let out = storage.bytes
            header.withUnsafeBytes { out.sub(0, header.count).copyMemory(from: $0) }
            entry.data.withUnsafeBytes { out.sub(header.count, dataLength).copyMemory(from: $0.sub(0, dataLength)) }
            out.setU16(2, UInt16(header.count + dataLength))
            // No flags and offset 0: a whole datagram (the reserved bit is cleared as RFC 791 wants).
            out.setU16(6, 0)
            out.setU16(10, 0)
            out.setU16(10, InternetChecksum.of(UnsafeRawBufferPointer(out.sub(0, header.count))))
        }
        return finish(storage, fragmentCount: fragmentCount) { $0.reassembled += 1 }
    }

    /// RFC 6946: an atomic fragment is processed on its own, at once. It comes
    /// back without its fragment header, like any rebuilt datagram.
    func atomic(_ ip: IPv6View, fragmentHeaderOffset at: Int, nextHeaderField field: Int) -> Outcome {
        let bytes = ip.bytes
        let after = at + IPv6FragmentHeader.length
        let storage = ReassembledDatagram.Storage(count: bytes.count - IPv6FragmentHeader.length)
        let out = storage.bytes
        out.sub(0, at).copyMemory(from: bytes.sub(0, at))
        out.sub(at, bytes.count - after).copyMemory(from: bytes.suffix(from: after))
        out.setU16(4, UInt16(out.count - IPv6View.headerLength))
        out.setU8(field, bytes.u8(at))
        return finish(storage, fragmentCount: 1) { $0.atomicFragments += 1 }
    }

    /// Validates the rebuilt bytes once, as the packet path validates everything.
    func finish(_ storage: ReassembledDatagram.Storage, fragmentCount: Int,
                count: (inout Counters) -> Void) -> Outcome {
        guard let view = try? IPPacketView(UnsafeRawBufferPointer(storage.bytes)), !view.isFragment else {
            counters.malformed += 1
            return .dropped(.malformed)
        }
        count(&counters)
        return .complete(ReassembledDatagram(storage: storage, view: view, fragmentCount: fragmentCount))
    }

    // MARK: Drops, eviction and expiry

    /// Counts a fragment dropped alone.
    func dropped(_ reason: DropReason) -> Outcome {
        switch reason {
        case .duplicate: counters.duplicates += 1
        case .badLength: counters.badLengths += 1
        case .tooLong: counters.tooLong += 1
        case .tinyFirstFragment: counters.tinyFirstFragments += 1
        case .overlap, .inconsistentLength, .tooManyFragments, .memoryLimit, .malformed:
            return discarded(nil, reason)
        }
        return .dropped(reason)
    }

    /// Discards the datagram under `key` (if any) and counts why.
    func discarded(_ key: Key?, _ reason: DropReason) -> Outcome {
        if let key { remove(key) }
        switch reason {
        case .overlap: counters.overlaps += 1
        case .inconsistentLength: counters.inconsistentLengths += 1
        case .tooManyFragments: counters.tooManyFragments += 1
        case .memoryLimit: counters.overMemoryLimit += 1
        case .malformed: counters.malformed += 1
        case .duplicate, .badLength, .tooLong, .tinyFirstFragment:
            return dropped(reason)
        }
        return .dropped(reason)
    }

    func remove(_ key: Key) {
        guard let entry = entries.removeValue(forKey: key) else { return }
        memoryInUse -= entry.memory
    }

    /// Removes the oldest datagram other than `key`'s; false when there is none.
    func evictOldest(sparing key: Key) -> Bool {
        var oldest: (key: Key, serial: Int)? = nil
        for (candidate, entry) in entries where candidate != key {
            if oldest.map({ entry.serial < $0.serial }) ?? true { oldest = (candidate, entry.serial) }
        }
        guard let oldest else { return false }
        remove(oldest.key)
        return true
    }

    /// Drops every datagram that has waited `timeout` or longer, silently.
    /// Returns how many.
    @discardableResult
    public func expire(now: Instant) -> Int {
        expired(now: now).count
    }

    /// As `expire(now:)`, and answers each expired datagram whose first fragment
    /// arrived with ICMP time exceeded, code 1 (RFC 792; RFC 8200 §4.5 and RFC
    /// 4443 §3.3 for IPv6), quoting that fragment. None when the first fragment
    /// never came (nothing to quote, and RFC 8200 says not to), nor where
    /// RFC 1122 §3.2.2 / RFC 4443 §2.4(e) forbid an error (a multicast destination, say).
    @discardableResult
    public func expire(now: Instant, sendingTimeExceededTo sink: inout some PacketSink) -> Int {
        let gone = expired(now: now)
        for entry in gone {
            guard let header = entry.firstHeader else { continue }
            let length = min(header.count + entry.firstDataLength, 1280)
            withUnsafeTemporaryAllocation(byteCount: length, alignment: 8) { quote in
                let fromHeader = min(header.count, length)
                header.withUnsafeBytes { quote.sub(0, fromHeader).copyMemory(from: $0.sub(0, fromHeader)) }
                entry.data.withUnsafeBytes {
                    quote.sub(fromHeader, length - fromHeader).copyMemory(from: $0.sub(0, length - fromHeader))
                }
                guard let first = try? IPPacketView(quoted: UnsafeRawBufferPointer(quote)),
                      IPFraming.mayAnswerWithError(first) else { return }
                var sent = false
                sink.send(capacity: 48 + length) { buffer in
                    let n = IPFraming.writeReassemblyTimeExceeded(into: buffer, replyingTo: first)
                    sent = n > 0
                    return n
                }
                if sent { counters.timeExceededSent += 1 }
            }
        }
        return gone.count
    }

    /// Removes the datagrams whose time is up, oldest first.
    func expired(now: Instant) -> [Entry] {
        var gone: [(key: Key, entry: Entry)] = []
        for (key, entry) in entries where now - entry.firstArrival >= configuration.timeout {
            gone.append((key, entry))
        }
        gone.sort { $0.entry.serial < $1.entry.serial }
        for item in gone { remove(item.key) }
        counters.timedOut += gone.count
        return gone.map(\.entry)
    }
}
