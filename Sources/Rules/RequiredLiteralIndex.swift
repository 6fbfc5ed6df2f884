/// Which URL-REGEX rules can match a URL, found in one pass over it: each
/// indexed rule's regex has a run of bytes every match contains
/// (`ByteMatcher.requiredLiteral`: "adserver7.test/" in
/// `^https?://([a-z0-9-]+\.)*adserver7\.test/`), and a URL without that run,
/// in either case, cannot match. An ad-blocking profile has thousands of such
/// lines; without the index each request ran every one of them (about 290 ns
/// a line: 0.6 ms a request for two thousand lines).
///
/// The runs, lowercased, form an Aho–Corasick automaton: a trie with, for
/// each node, the node of its longest proper suffix that is also in the trie.
/// The scan follows one byte at a time and reports every run that ends
/// there, so its cost is the URL's length plus the runs found, whatever the
/// number of lines. Candidates still run their regex: the index only rules
/// lines out.
struct RequiredLiteralIndex: Sendable {
    /// Per node, its edges as (byte, child); the root's are also in `rootEdges`.
    private var edges: [[(byte: UInt8, child: Int32)]] = [[]]
    private var rootEdges = [Int32](repeating: 0, count: 128)
    /// Per node: the longest proper suffix's node, and the nearest node along
    /// that chain that ends a run (-1: none).
    private var failure: [Int32] = [0]
    private var nextOutput: [Int32] = [-1]
    /// Per node, the literal ids that end there.
    private var outputs: [[Int32]] = [[]]
    private var built = true
    /// `owners[id]`: the rule of literal `id`; ids are given in rule order.
    private(set) var owners: [Int] = []

    var isEmpty: Bool { owners.isEmpty }

    /// Rules must be inserted in ascending order; `build` before `candidates`.
    mutating func insert(_ literal: [UInt8], owner: Int) {
        precondition(!literal.isEmpty && literal.allSatisfy { $0 < 0x80 }, "an indexed literal is ASCII and not empty")
        precondition(owners.last.map { $0 < owner } ?? true, "rules are inserted in order")
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

    /// Links every node to its longest proper suffix in the trie, breadth first.
    mutating func build() {
        var queue: [Int] = edges[0].map { Int($0.child) }
        for child in queue { failure[child] = 0 }
        var head = 0
        while head < queue.count {
            let node = queue[head]
            head += 1
            for (byte, child) in edges[node] {
                var fallback = Int(failure[node])
                while fallback != 0, step(fallback, byte) == nil { fallback = Int(failure[fallback]) }
                let target = step(fallback, byte).map(Int.init) ?? 0
                failure[Int(child)] = Int32(target == Int(child) ? 0 : target)
                let suffix = Int(failure[Int(child)])
                nextOutput[Int(child)] = outputs[suffix].isEmpty ? nextOutput[suffix] : Int32(suffix)
                queue.append(Int(child))
            }
        }
        built = true
    }

    private func step(_ node: Int, _ byte: UInt8) -> Int32? {
        if node == 0 { let child = rootEdges[Int(byte)]; return child == 0 ? nil : child }
        for edge in edges[node] where edge.byte == byte { return edge.child }
        return nil
    }

    /// The owners whose literal occurs in `text`, ascending; nil when the text
    /// is not ASCII (Regex's Characters may then match what bytes would not:
    /// every owner is a candidate).
    func candidates(in text: String) -> [Int]? {
        if let found = text.utf8.withContiguousStorageIfAvailable({ candidates(bytes: $0) }) { return found }
        return Array(text.utf8).withUnsafeBufferPointer { candidates(bytes: $0) }
    }

    func candidates(bytes: UnsafeBufferPointer<UInt8>) -> [Int]? {
        precondition(built, "build the index after the last insert")
        for byte in bytes where byte >= 0x80 { return nil }
        var found: [Int32] = []
        var node = 0
        for raw in bytes {
            let byte = Self.lower(raw)
            while node != 0, step(node, byte) == nil { node = Int(failure[node]) }
            node = step(node, byte).map(Int.init) ?? 0
            var report = outputs[node].isEmpty ? Int(nextOutput[node]) : node
            while report > 0 {
                found.append(contentsOf: outputs[report])
                report = Int(nextOutput[report])
            }
        }
        // Literal ids were given in rule order, so sorting ids sorts owners.
        found.sort()
        var owned: [Int] = []
        owned.reserveCapacity(found.count)
        for id in found where owned.last != owners[Int(id)] { owned.append(owners[Int(id)]) }
        return owned
    }

    @inline(__always)
    static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}
