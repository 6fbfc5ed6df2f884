/// Which of many byte strings occur in a text, found in one pass over it, ASCII
/// case-insensitively: an Aho–Corasick automaton. A trie holds the strings,
/// lowercased; each node also knows the node of its longest proper suffix
/// that is in the trie. The scan follows one byte at a time and reports every
/// string that ends there, so its cost is the text's length plus the strings
/// found, whatever their number.
///
/// Two users. URL-REGEX lines: each regex in the byte matcher's subset has a
/// run of bytes that every match contains (`ByteMatcher.requiredLiteral`:
/// "adserver7.test/" in `^https?://([a-z0-9-]+\.)*adserver7\.test/`), and a
/// URL without the run cannot match, so only the lines whose run the URL
/// holds run their regex. DOMAIN-KEYWORD lines (`KeywordMatcher`): the host
/// contains the keyword or the line does not match. Ad-blocking profiles hold
/// thousands of both; before, each request ran every URL-REGEX line (1.45 ms
/// a request for two thousand) and each flow compared every keyword.
struct LiteralAutomaton: Sendable {
    /// Per node, its edges as (byte, child); the root's are also in `rootEdges`.
    private var edges: [[(byte: UInt8, child: Int32)]] = [[]]
    private var rootEdges = [Int32](repeating: 0, count: 256)
    /// Per node: the longest proper suffix's node, and the nearest node along
    /// that chain that ends a run (-1: none).
    private var failure: [Int32] = [0]
    private var nextOutput: [Int32] = [-1]
    /// Per node, the literal ids that end there.
    private var outputs: [[Int32]] = [[]]
    private var built = true
    /// What `scan` follows, laid out flat by `build` (the nested arrays above
    /// cost a reference count per step): node n's edges are
    /// `edgeBytes[edgeStart[n] ..< edgeStart[n + 1]]` with their children in
    /// `edgeChildren`, its literal ids `outputIds[outputStart[n] ..< outputStart[n + 1]]`.
    private var edgeStart: [Int32] = [0, 0]
    private var edgeBytes: [UInt8] = []
    private var edgeChildren: [Int32] = []
    private var outputStart: [Int32] = [0, 0]
    private var outputIds: [Int32] = []
    /// `owners[id]`: the rule of string `id`.
    private(set) var owners: [Int] = []

    var isEmpty: Bool { owners.isEmpty }

    /// Adds a string (not empty) for rule `owner`; `build` before asking.
    mutating func insert(_ literal: [UInt8], owner: Int) {
        precondition(!literal.isEmpty, "an empty string occurs everywhere")
        var node = 0
        for byte in literal.map(Self.lower) {
            if let child = edges[node].first(where: { $0.byte == byte })?.child {
                node = Int(child)
            } else {
                let child = Int32(edges.count)
                edges.append([]); failure.append(0); nextOutput.append(-1); outputs.append([])
                edges[node].append((byte, child))
                if node == 0 { rootEdges[Int(byte)] = child }
                node = Int(child)
            }
        }
        outputs[node].append(Int32(owners.count))
        owners.append(owner)
        built = false
    }

    /// Lays the trie out flat, then links every node to its longest proper
    /// suffix in it, breadth first.
    mutating func build() {
        edgeStart = [0]
        edgeBytes = []
        edgeChildren = []
        outputStart = [0]
        outputIds = []
        for node in edges.indices {
            for edge in edges[node] {
                edgeBytes.append(edge.byte)
                edgeChildren.append(edge.child)
            }
            edgeStart.append(Int32(edgeBytes.count))
            outputIds += outputs[node]
            outputStart.append(Int32(outputIds.count))
        }
        var queue: [Int] = edges[0].map { Int($0.child) }
        for child in queue { failure[child] = 0 }
        var head = 0
        while head < queue.count {
            let node = queue[head]
            head += 1
            for (byte, child) in edges[node] {
                var fallback = Int(failure[node])
                while fallback != 0, next(fallback, byte) == nil { fallback = Int(failure[fallback]) }
                let target = next(fallback, byte).map(Int.init) ?? 0
                failure[Int(child)] = Int32(target == Int(child) ? 0 : target)
                let suffix = Int(failure[Int(child)])
                nextOutput[Int(child)] = endsLiteral(suffix) ? Int32(suffix) : nextOutput[suffix]
                queue.append(Int(child))
            }
        }
        built = true
    }

    /// Whether some literal ends at `node`, from the flat layout.
    @inline(__always)
    private func endsLiteral(_ node: Int) -> Bool { outputStart[node] != outputStart[node + 1] }

    /// The child of `node` along `byte`, if the trie has one.
    @inline(__always)
    private func next(_ node: Int, _ byte: UInt8) -> Int32? {
        if node == 0 { let child = rootEdges[Int(byte)]; return child == 0 ? nil : child }
        for i in Int(edgeStart[node]) ..< Int(edgeStart[node + 1]) where edgeBytes[i] == byte { return edgeChildren[i] }
        return nil
    }

    /// For URL-REGEX: the owners whose string occurs in `text`, ascending;
    /// nil when the text is not ASCII (Regex's Characters may then match what
    /// bytes would not: every owner is a candidate).
    func candidates(in text: String) -> [Int]? {
        if let found = text.utf8.withContiguousStorageIfAvailable({ candidates(bytes: $0) }) { return found }
        return Array(text.utf8).withUnsafeBufferPointer { candidates(bytes: $0) }
    }

    func candidates(bytes: UnsafeBufferPointer<UInt8>) -> [Int]? {
        for byte in bytes where byte >= 0x80 { return nil }
        return owners(occurringIn: bytes)
    }

    /// The owners whose string occurs in `bytes`, compared as bytes, ascending.
    func owners(occurringIn bytes: UnsafeBufferPointer<UInt8>) -> [Int] {
        var found: [Int] = []
        scan(bytes) { owner in
            // Room for a few at the first: growing from one by one reallocated at each.
            if found.isEmpty { found.reserveCapacity(8) }
            found.append(owner)
        }
        guard found.count > 1 else { return found }
        // Deduplicated in place: every request's URL comes here for each rewriter.
        found.sort()
        var kept = 1
        for i in 1 ..< found.count where found[i] != found[kept - 1] {
            found[kept] = found[i]
            kept += 1
        }
        found.removeLast(found.count - kept)
        return found
    }

    /// The smallest owner whose string occurs in `bytes`.
    func firstOwner(occurringIn bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var best: Int?
        scan(bytes) { owner in if best.map({ owner < $0 }) ?? true { best = owner } }
        return best
    }

    /// Follows the automaton over `bytes`, reporting the owner of every
    /// string that ends at each byte.
    private func scan(_ bytes: UnsafeBufferPointer<UInt8>, _ report: (Int) -> Void) {
        precondition(built, "build the automaton after the last insert")
        var node = 0
        for raw in bytes {
            let byte = Self.lower(raw)
            var child = next(node, byte)
            while child == nil, node != 0 {
                node = Int(failure[node])
                child = next(node, byte)
            }
            node = child.map(Int.init) ?? 0
            var ending = endsLiteral(node) ? node : Int(nextOutput[node])
            while ending > 0 {
                for i in Int(outputStart[ending]) ..< Int(outputStart[ending + 1]) { report(owners[Int(outputIds[i])]) }
                ending = Int(nextOutput[ending])
            }
        }
    }

    @inline(__always)
    static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}
