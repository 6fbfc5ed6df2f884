/// A DOMAIN-SET's names in one sorted table: each name stored once, its labels
/// reversed ("x.ads.test" as "test.ads.x"), lowercased, in one byte array,
/// sorted, with its line and kind beside it. A list of 100,000 names takes
/// about 3 MB this way, against some 30 MB as rules in a DomainSuffixIndex
/// (a String and a hash-map edge per name); lists of hundreds of thousands
/// of names are what DOMAIN-SET is for.
///
/// A lookup tries the host's suffixes, shortest first ("test", "test.ads",
/// "test.ads.x"), each by binary search, comparing the stored bytes with the
/// host's labels read backwards in place: no allocation. A stored name
/// matches a suffix equal to it when it covers subdomains (`.ads.test`),
/// and only the whole host otherwise.
struct DomainTable: Sendable, Equatable {
    private var bytes: [UInt8] = []
    /// Entry i is bytes[starts[i] ..< starts[i + 1]].
    private var starts: [UInt32] = [0]
    /// The entry's line, with `suffixFlag` set for names that cover subdomains.
    private var tags: [UInt32] = []
    private static let suffixFlag: UInt32 = 1 << 31

    /// Collects names as a list file is read, each straight into one byte
    /// buffer (no String per name), then sorts them once.
    struct Builder {
        private var bytes: [UInt8] = []
        private var starts: [UInt32] = [0]
        private var tags: [UInt32] = []

        /// A name (no trailing dot, no empty label; any case), its line, and
        /// whether it covers the names under it.
        mutating func add(_ name: Substring.UTF8View, suffix: Bool, line: Int) {
            // Labels reversed: walk the name from its end, copying each label.
            var labelEnd = name.endIndex
            var index = name.endIndex
            while index > name.startIndex {
                let before = name.index(before: index)
                if name[before] == UInt8(ascii: ".") {
                    bytes += name[index ..< labelEnd].lazy.map(DomainSuffixIndex<Int>.lower)
                    bytes.append(UInt8(ascii: "."))
                    labelEnd = before
                }
                index = before
            }
            bytes += name[name.startIndex ..< labelEnd].lazy.map(DomainSuffixIndex<Int>.lower)
            starts.append(UInt32(bytes.count))
            tags.append(UInt32(clamping: line) & ~DomainTable.suffixFlag | (suffix ? DomainTable.suffixFlag : 0))
        }

        func build() -> DomainTable {
            var order = Array(0 ..< tags.count)
            bytes.withUnsafeBufferPointer { all in
                func key(_ i: Int) -> UnsafeBufferPointer<UInt8> {
                    UnsafeBufferPointer(rebasing: all[Int(starts[i]) ..< Int(starts[i + 1])])
                }
                order.sort { key($0).lexicographicallyPrecedes(key($1)) }
            }
            var table = DomainTable()
            table.bytes.reserveCapacity(bytes.count)
            table.starts.reserveCapacity(order.count + 1)
            table.tags.reserveCapacity(order.count)
            for i in order {
                table.bytes += bytes[Int(starts[i]) ..< Int(starts[i + 1])]
                table.starts.append(UInt32(table.bytes.count))
                table.tags.append(tags[i])
            }
            return table
        }
    }

    private init() {}

    /// Names as read (lowercase, no trailing dot, no empty label).
    init(_ entries: [(name: String, suffix: Bool, line: Int)]) {
        var builder = Builder()
        for entry in entries { builder.add(Substring(entry.name).utf8, suffix: entry.suffix, line: entry.line) }
        self = builder.build()
    }

    var count: Int { tags.count }

    /// The matching name with the smallest line: (line, name as written in a
    /// list, covers subdomains); nil when none matches.
    func firstMatch(_ host: String) -> (line: Int, name: String, suffix: Bool)? {
        guard let entry = firstEntry(host) else { return nil }
        return (Int(tags[entry] & ~Self.suffixFlag), name(of: entry), tags[entry] & Self.suffixFlag != 0)
    }

    /// Whether a name matches: what a flow's rule asks, building no string.
    func contains(_ host: String) -> Bool { firstEntry(host) != nil }

    private func firstEntry(_ host: String) -> Int? {
        var host = host
        return host.withUTF8 { firstEntry(bytes: $0) }
    }

    private func firstEntry(bytes host: UnsafeBufferPointer<UInt8>) -> Int? {
        var end = host.count
        if end > 0, host[end - 1] == UInt8(ascii: ".") { end -= 1 }
        guard end > 0, end <= 253 else { return nil }
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 128) { labelStarts -> Int? in
            // labelStarts[i]: where label i begins; labels end at a dot or `end`.
            labelStarts[0] = 0
            var labels = 1
            for i in 0 ..< end where host[i] == UInt8(ascii: ".") {
                guard labels < 128, i + 1 < end, i > labelStarts[labels - 1] else { return nil }
                labelStarts[labels] = i + 1
                labels += 1
            }
            var best: (line: Int, entry: Int)?
            // Suffixes from the last label alone to the whole host.
            for first in stride(from: labels - 1, through: 0, by: -1) {
                let whole = first == 0
                var low = 0, high = count
                // The first entry not below the suffix.
                while low < high {
                    let middle = (low + high) / 2
                    if compare(entry: middle, host: host, end: end, labelStarts: labelStarts, labels: labels, first: first) < 0 {
                        low = middle + 1
                    } else {
                        high = middle
                    }
                }
                var i = low
                while i < count, compare(entry: i, host: host, end: end, labelStarts: labelStarts, labels: labels, first: first) == 0 {
                    let tag = tags[i]
                    if whole || tag & Self.suffixFlag != 0 {
                        let line = Int(tag & ~Self.suffixFlag)
                        if best.map({ line < $0.line }) ?? true { best = (line, i) }
                    }
                    i += 1
                }
            }
            return best?.entry
        }
    }

    /// Entry `i` against the host's labels `first..<labels`, read from the last.
    private func compare(entry i: Int, host: UnsafeBufferPointer<UInt8>, end: Int,
                         labelStarts: UnsafeMutableBufferPointer<Int>, labels: Int, first: Int) -> Int {
        var position = Int(starts[i])
        let stop = Int(starts[i + 1])
        var label = labels - 1
        while label >= first {
            let from = labelStarts[label]
            let to = label + 1 < labels ? labelStarts[label + 1] - 1 : end
            for j in from ..< to {
                guard position < stop else { return -1 } // the entry is a prefix: it sorts first
                let a = bytes[position], b = DomainSuffixIndex<Int>.lower(host[j])
                if a != b { return a < b ? -1 : 1 }
                position += 1
            }
            if label > first {
                guard position < stop else { return -1 }
                let a = bytes[position], b = UInt8(ascii: ".")
                if a != b { return a < b ? -1 : 1 }
                position += 1
            }
            label -= 1
        }
        return position < stop ? 1 : 0
    }

    /// Entry `i`'s name the way round it was written.
    private func name(of i: Int) -> String {
        let key = bytes[Int(starts[i]) ..< Int(starts[i + 1])]
        return key.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).reversed()
            .map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".")
    }
}
