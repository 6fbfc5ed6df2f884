/// "Does this pattern match anywhere in this text, and where are its groups",
/// answered over bytes for the plain regexes profiles use
/// (`^https?://[a-z0-9.-]+\.test/api/(.*)`), without Swift's `Regex`, which
/// costs about a microsecond a URL even when the answer is no, and which
/// backtracks: nested repetition takes it exponential time on some texts.
///
/// It runs a Thompson automaton in lock step over the text (a Pike VM):
/// time linear in the text whatever the pattern, so no pattern can make a
/// request slow. Threads are kept in the order a backtracking engine would
/// try them, so the match and its groups are the ones `Regex` finds
/// (leftmost, then the first alternative, greedy or lazy as written).
///
/// Only a subset is compiled: literals and the usual escapes, `.`, bracket
/// classes of ASCII characters and ranges, `\d \D \w \W \s \S`, groups (capturing
/// or `(?:`), `|`, the quantifiers `* + ? {n} {n,} {n,m}` (greedy or lazy),
/// `^ $`, and "(?i)" at the very start. Anything else, such as other flags,
/// lookaround, backreferences, `\b` or a class with set operations, is
/// left to `Regex`, as is any text with a byte that is not printable ASCII:
/// there Swift's Characters (canonical equivalence, "\r\n" as one) and line
/// rules differ from bytes. On the rest the two agree, which
/// `ByteMatcherTests` checks against `Regex` on generated patterns, groups
/// and all.
struct ByteMatcher: Sendable {
    /// The program as `emit` writes it.
    enum Emitted {
        /// One byte in the set (a bitmap over 0..<128).
        case byte(low: UInt64, high: UInt64)
        /// Both ways, the first preferred (as a backtracking engine tries it first).
        case split(Int, Int)
        case jump(Int)
        /// Records the position in a capture slot (2n and 2n+1: group n's bounds).
        case save(Int)
        case atStart
        case atEnd
        case match
    }

    /// The program as it is kept: the same instructions in 12 bytes each
    /// instead of 24, the byte sets in `sets` (a profile holds thousands of
    /// programs for as long as it is loaded).
    enum Instruction: Sendable {
        /// This one byte: most of a pattern is literal text.
        case literal(UInt8)
        /// One byte in `sets[set]`.
        case byte(set: Int32)
        case split(Int32, Int32)
        case jump(Int32)
        case save(Int32)
        case atStart
        case atEnd
        case match
    }

    let program: [Instruction]
    /// The byte sets of `.byte` instructions, each once.
    let sets: [ByteSet]

    struct ByteSet: Sendable, Equatable {
        var low: UInt64
        var high: UInt64
    }
    /// Two per group, group 0 (the whole match) first.
    let slotCount: Int
    /// False when the groups found by lock step may differ from Regex's: an
    /// unbounded repetition whose body can match nothing and holds a group.
    /// A backtracking engine may run such a body once more on nothing
    /// (`(a|)*` on "ab" ends with group 1 empty at 1), which the lock step's
    /// rule "one thread per instruction and position" cuts. The match itself
    /// is the same; only its groups are then left to Regex.
    let capturesAreExact: Bool
    /// The bytes a match can begin with: a search skips the others while no
    /// thread is alive.
    let startBytes: (low: UInt64, high: UInt64)
    /// A match can be empty, so no byte can be skipped.
    let startCanBeEmpty: Bool
    /// Every match begins at offset 0 ("^" before anything else).
    let anchoredAtStart: Bool
    /// Bytes every match contains (`requiredLiteral(in:)`), for the indexes.
    let requiredLiteral: [UInt8]?

    /// Nil when the pattern is outside the subset (or too large, past
    /// `maximumInstructions`, from counted repetition).
    init?(_ pattern: String) {
        guard let (node, groupCount) = Self.parse(pattern) else { return nil }
        var emitted: [Emitted] = [.save(0)]
        guard Self.emit(node, into: &emitted) else { return nil }
        emitted.append(.save(1))
        emitted.append(.match)
        (startBytes, startCanBeEmpty, anchoredAtStart) = Self.startFacts(emitted)
        // Kept for the profile's life, so exactly as long as it is.
        var sets: [ByteSet] = []
        var program: [Instruction] = []
        program.reserveCapacity(emitted.count)
        for instruction in emitted {
            switch instruction {
            case let .byte(low, high) where low.nonzeroBitCount + high.nonzeroBitCount == 1:
                program.append(.literal(low != 0 ? UInt8(low.trailingZeroBitCount) : UInt8(64 + high.trailingZeroBitCount)))
            case let .byte(low, high):
                let set = ByteSet(low: low, high: high)
                if let index = sets.firstIndex(of: set) {
                    program.append(.byte(set: Int32(index)))
                } else {
                    sets.append(set)
                    program.append(.byte(set: Int32(sets.count - 1)))
                }
            case let .split(a, b): program.append(.split(Int32(a), Int32(b)))
            case let .jump(target): program.append(.jump(Int32(target)))
            case let .save(slot): program.append(.save(Int32(slot)))
            case .atStart: program.append(.atStart)
            case .atEnd: program.append(.atEnd)
            case .match: program.append(.match)
            }
        }
        self.program = program
        self.sets = sets.withUnsafeBufferPointer { Array($0) }
        slotCount = 2 * (groupCount + 1)
        capturesAreExact = !Self.loopsOverNothingAroundAGroup(node)
        requiredLiteral = Self.requiredLiteral(in: node)
    }

    /// The pattern's tree and its number of capturing groups; nil outside the subset.
    static func parse(_ pattern: String) -> (Node, groupCount: Int)? {
        var parser = Parser(bytes: Array(pattern.utf8))
        // "(?i)" in front, the one flag profiles write: both cases of each letter.
        if parser.bytes.starts(with: Array("(?i)".utf8)) {
            parser.caseInsensitive = true
            parser.position = 4
        }
        guard let node = parser.parseAlternation(), parser.position == parser.bytes.count else { return nil }
        return (node, parser.groupCount)
    }

    /// Also bounds the recursion through splits and jumps in `add`.
    static let maximumInstructions = 1024

    /// True when the pattern matches somewhere in `text`; nil when the text
    /// is not for bytes (anything but printable ASCII in it).
    func matches(_ text: String) -> Bool? {
        if let answer = text.utf8.withContiguousStorageIfAvailable({ matches(bytes: $0) }) { return answer }
        return Array(text.utf8).withUnsafeBufferPointer { matches(bytes: $0) }
    }

    func matches(bytes: UnsafeBufferPointer<UInt8>) -> Bool? {
        for byte in bytes where byte < 0x20 || byte > 0x7E { return nil }
        return run(bytes, from: 0, slots: 0) != nil
    }

    /// What a search over bytes found.
    enum Search: Equatable {
        /// The text has a byte that is not printable ASCII: ask Regex.
        case notForBytes
        case noMatch
        /// Capture slots: group n spans `slots[2n] ..< slots[2n+1]` in UTF-8
        /// offsets, -1 for a group that took no part.
        case match(slots: [Int])
    }

    /// The first match at or after byte offset `start` (a "^" still means
    /// offset 0, as in Regex's `matches(of:)`), with its groups.
    func firstMatch(bytes: UnsafeBufferPointer<UInt8>, from start: Int = 0) -> Search {
        for byte in bytes where byte < 0x20 || byte > 0x7E { return .notForBytes }
        return run(bytes, from: start, slots: slotCount).map { .match(slots: $0) } ?? .noMatch
    }

    /// The lock-step search. With `slots` 0 it only asks whether there is a
    /// match and stops at the first one found; otherwise it keeps the threads
    /// in priority order and returns the winner's slots. Its lists live in
    /// one temporary allocation (on the stack for the usual sizes), so a
    /// search allocates nothing but the slots it returns.
    private func run(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, slots: Int) -> [Int]? {
        let size = program.count
        let words = size * (3 + 2 * slots) + 2 * slots
        return program.withUnsafeBufferPointer { program in
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: words) { memory in
                memory.initialize(repeating: 0)
                let base = memory.baseAddress!
                var machine = Machine(program: program, slots: slots, count: bytes.count, seen: base,
                                      currentThreads: base + size, nextThreads: base + 2 * size,
                                      currentSlots: base + 3 * size, nextSlots: base + 3 * size + size * slots,
                                      scratch: base + 3 * size + 2 * size * slots, found: base + 3 * size + 2 * size * slots + slots)
                var position = start
                while true {
                    // The next list holds the threads at `position`. A thread
                    // that starts here comes after them all; once a match is
                    // found, later starts cannot win.
                    if !machine.matched {
                        if machine.nextCount == 0 {
                            if anchoredAtStart, position > 0 { break }
                            if !startCanBeEmpty {
                                // No thread alive: skip to a byte a match can begin with.
                                while position < bytes.count, !Self.contains(startBytes, bytes[position]) { position += 1 }
                                if position == bytes.count { break }
                            }
                        }
                        machine.scratch.update(repeating: -1, count: slots)
                        if machine.add(0, at: position), slots == 0 { return [] }
                    }
                    if position == bytes.count || machine.nextCount == 0 && machine.matched { break }
                    machine.advance()
                    let byte = bytes[position]
                    position += 1
                    for index in 0 ..< machine.currentCount {
                        let pc = Int(machine.currentThreads[index])
                        switch program[pc] {
                        case let .literal(expected): guard byte == expected else { continue }
                        case let .byte(set): guard Self.contains((sets[Int(set)].low, sets[Int(set)].high), byte) else { continue }
                        case .split, .jump, .save, .atStart, .atEnd, .match: continue
                        }
                        machine.scratch.update(from: machine.currentSlots + index * slots, count: slots)
                        // A match cuts every thread after this one: they are the
                        // alternatives a backtracking engine would try only if this failed.
                        if machine.add(pc + 1, at: position) {
                            if slots == 0 { return [] }
                            break
                        }
                    }
                }
                guard machine.matched else { return nil }
                return (0 ..< slots).map { Int(machine.found[$0]) }
            }
        }
    }

    @inline(__always)
    static func contains(_ set: (low: UInt64, high: UInt64), _ byte: UInt8) -> Bool {
        (byte < 64 ? set.low >> UInt64(byte) : set.high >> UInt64(byte &- 64)) & 1 == 1
    }

    /// The two thread lists (pcs and, per thread, its capture slots), the
    /// visited marks and the scratch slots, all in memory `run` lends it.
    private struct Machine {
        let program: UnsafeBufferPointer<Instruction>
        let slots: Int
        let count: Int
        /// `seen[pc] == position + 1`: pc was added at that position already.
        let seen: UnsafeMutablePointer<Int32>
        var currentThreads: UnsafeMutablePointer<Int32>
        var nextThreads: UnsafeMutablePointer<Int32>
        var currentSlots: UnsafeMutablePointer<Int32>
        var nextSlots: UnsafeMutablePointer<Int32>
        let scratch: UnsafeMutablePointer<Int32>
        let found: UnsafeMutablePointer<Int32>
        var currentCount = 0
        var nextCount = 0
        var matched = false

        /// The next list becomes the current one, and the next one empty.
        mutating func advance() {
            swap(&currentThreads, &nextThreads)
            swap(&currentSlots, &nextSlots)
            currentCount = nextCount
            nextCount = 0
        }

        /// Follows jumps, splits, saves and assertions from `pc` at
        /// `position`, adding the threads that wait on a byte to the next
        /// list in priority order; true when the match state is reached (its
        /// slots are then in `found`, and lower paths are not followed).
        mutating func add(_ pc: Int, at position: Int) -> Bool {
            let stamp = Int32(truncatingIfNeeded: position + 1)
            if seen[pc] == stamp { return false }
            seen[pc] = stamp
            switch program[pc] {
            case .literal, .byte:
                nextThreads[nextCount] = Int32(truncatingIfNeeded: pc)
                (nextSlots + nextCount * slots).update(from: scratch, count: slots)
                nextCount += 1
                return false
            case let .split(a, b):
                return add(Int(a), at: position) || add(Int(b), at: position)
            case let .jump(target):
                return add(Int(target), at: position)
            case let .save(wide):
                let slot = Int(wide)
                guard slot < slots else { return add(pc + 1, at: position) }
                let saved = scratch[slot]
                scratch[slot] = Int32(truncatingIfNeeded: position)
                defer { scratch[slot] = saved }
                return add(pc + 1, at: position)
            case .atStart:
                return position == 0 && add(pc + 1, at: position)
            case .atEnd:
                return position == count && add(pc + 1, at: position)
            case .match:
                found.update(from: scratch, count: slots)
                matched = true
                return true
            }
        }
    }

    /// The bytes a match can begin with, and whether one can be empty,
    /// found by following the program from its start with every assertion
    /// passing (so the set is never too small); and whether every path
    /// passes "^" before its first byte.
    static func startFacts(_ program: [Emitted]) -> (bytes: (low: UInt64, high: UInt64), canBeEmpty: Bool, anchored: Bool) {
        func explore(_ pc: Int, startPasses: Bool, visited: inout [Bool], set: inout (low: UInt64, high: UInt64)) -> Bool {
            if visited[pc] { return false }
            visited[pc] = true
            switch program[pc] {
            case let .byte(low, high):
                set.low |= low; set.high |= high
                return false
            case let .split(a, b):
                let first = explore(a, startPasses: startPasses, visited: &visited, set: &set)
                return explore(b, startPasses: startPasses, visited: &visited, set: &set) || first
            case let .jump(target):
                return explore(target, startPasses: startPasses, visited: &visited, set: &set)
            case .save, .atEnd:
                return explore(pc + 1, startPasses: startPasses, visited: &visited, set: &set)
            case .atStart:
                return startPasses && explore(pc + 1, startPasses: startPasses, visited: &visited, set: &set)
            case .match:
                return true
            }
        }
        var visited = [Bool](repeating: false, count: program.count)
        var bytes: (low: UInt64, high: UInt64) = (0, 0)
        let canBeEmpty = explore(0, startPasses: true, visited: &visited, set: &bytes)
        visited = [Bool](repeating: false, count: program.count)
        var unanchored: (low: UInt64, high: UInt64) = (0, 0)
        let emptyWithoutStart = explore(0, startPasses: false, visited: &visited, set: &unanchored)
        return (bytes, canBeEmpty, !emptyWithoutStart && unanchored == (0, 0))
    }

    // MARK: Parsing

    indirect enum Node {
        case bytes(low: UInt64, high: UInt64)
        case atStart
        case atEnd
        case sequence([Node])
        case alternation([Node])
        /// `capture` is the group's number, nil for "(?:".
        case group(Node, capture: Int?)
        case repeated(Node, minimum: Int, maximum: Int?, greedy: Bool)

        /// True when the node can match the empty string.
        var canMatchNothing: Bool {
            switch self {
            case .bytes: false
            case .atStart, .atEnd: true
            case let .sequence(items): items.allSatisfy(\.canMatchNothing)
            case let .alternation(branches): branches.contains(where: \.canMatchNothing)
            case let .group(inner, _): inner.canMatchNothing
            case let .repeated(inner, minimum, _, _): minimum == 0 || inner.canMatchNothing
            }
        }

        var holdsAGroup: Bool {
            switch self {
            case .bytes, .atStart, .atEnd: false
            case let .sequence(nodes), let .alternation(nodes): nodes.contains(where: \.holdsAGroup)
            case let .group(inner, capture): capture != nil || inner.holdsAGroup
            case let .repeated(inner, _, _, _): inner.holdsAGroup
            }
        }
    }

    /// See `capturesAreExact`.
    static func loopsOverNothingAroundAGroup(_ node: Node) -> Bool {
        switch node {
        case .bytes, .atStart, .atEnd: false
        case let .sequence(nodes), let .alternation(nodes): nodes.contains(where: loopsOverNothingAroundAGroup)
        case let .group(inner, _): loopsOverNothingAroundAGroup(inner)
        case let .repeated(inner, _, maximum, _):
            maximum == nil && inner.canMatchNothing && inner.holdsAGroup || loopsOverNothingAroundAGroup(inner)
        }
    }

    struct Parser {
        let bytes: [UInt8]
        var position = 0
        /// Groups open around the current position; past 32 the pattern is
        /// left to Regex, so the recursion here stays shallow whatever the input.
        var depth = 0
        var caseInsensitive = false
        /// Capturing groups opened so far: a group's number is its "(" in order.
        var groupCount = 0

        var peek: UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func parseAlternation() -> Node? {
            var branches: [Node] = []
            repeat {
                guard let branch = parseSequence() else { return nil }
                branches.append(branch)
            } while consume(UInt8(ascii: "|"))
            return branches.count == 1 ? branches[0] : .alternation(branches)
        }

        mutating func parseSequence() -> Node? {
            var items: [Node] = []
            while let byte = peek, byte != UInt8(ascii: "|"), byte != UInt8(ascii: ")") {
                guard var atom = parseAtom() else { return nil }
                while let quantifier = peek, quantifier == UInt8(ascii: "*") || quantifier == UInt8(ascii: "+")
                    || quantifier == UInt8(ascii: "?") || quantifier == UInt8(ascii: "{") {
                    guard case let (minimum, maximum)? = parseQuantifier() else { return nil }
                    let lazy = consume(UInt8(ascii: "?"))
                    // Possessive ("a*+") has no lock-step form.
                    if peek == UInt8(ascii: "+") { return nil }
                    // Stacked quantifiers ("a**") mean different things in different engines.
                    if case .repeated = atom { return nil }
                    // Regex refuses a quantified anchor ("^*").
                    if case .atStart = atom { return nil }
                    if case .atEnd = atom { return nil }
                    atom = .repeated(atom, minimum: minimum, maximum: maximum, greedy: !lazy)
                }
                items.append(atom)
            }
            return items.count == 1 ? items[0] : .sequence(items)
        }

        mutating func parseQuantifier() -> (Int, Int?)? {
            guard let byte = peek else { return nil }
            position += 1
            switch byte {
            case UInt8(ascii: "*"): return (0, nil)
            case UInt8(ascii: "+"): return (1, nil)
            case UInt8(ascii: "?"): return (0, 1)
            default:
                // "{n}", "{n,}", "{n,m}"; any other "{" is left to Regex.
                guard let minimum = parseNumber() else { return nil }
                if consume(UInt8(ascii: "}")) { return (minimum, minimum) }
                guard consume(UInt8(ascii: ",")) else { return nil }
                if consume(UInt8(ascii: "}")) { return (minimum, nil) }
                guard let maximum = parseNumber(), maximum >= minimum, consume(UInt8(ascii: "}")) else { return nil }
                return (minimum, maximum)
            }
        }

        mutating func parseNumber() -> Int? {
            var value = 0, digits = 0
            while let byte = peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                position += 1
                if digits > 3 { return nil }
            }
            return digits == 0 ? nil : value
        }

        mutating func parseAtom() -> Node? {
            guard let byte = peek else { return nil }
            position += 1
            switch byte {
            case UInt8(ascii: "("):
                // "(?:" only; every other "(?" is a flag, a lookaround or a name.
                var capture: Int?
                if consume(UInt8(ascii: "?")) {
                    guard consume(UInt8(ascii: ":")) else { return nil }
                } else {
                    groupCount += 1
                    capture = groupCount
                }
                guard depth < 32 else { return nil }
                depth += 1
                defer { depth -= 1 }
                guard let inner = parseAlternation(), consume(UInt8(ascii: ")")) else { return nil }
                return .group(inner, capture: capture)
            case UInt8(ascii: "["):
                return parseClass()
            case UInt8(ascii: "."):
                // Any byte: the texts given to bytes are printable ASCII.
                return .bytes(low: ~0, high: ~0)
            case UInt8(ascii: "^"):
                return .atStart
            case UInt8(ascii: "$"):
                return .atEnd
            case UInt8(ascii: "\\"):
                return parseEscape(inClass: false)
            case UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "?"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "]"):
                // A quantifier with nothing before it, or a brace or bracket out of place.
                return nil
            default:
                guard byte >= 0x20, byte < 0x7F else { return nil }
                // "<{...}>" is interpolation syntax, which Regex refuses.
                if byte == UInt8(ascii: "<"), peek == UInt8(ascii: "{") { return nil }
                return folded(Self.single(byte))
            }
        }

        /// With "(?i)", a set holds both cases of each ASCII letter in it.
        func folded(_ node: Node) -> Node {
            guard caseInsensitive, case let .bytes(low, high) = node else { return node }
            // Bits 1...26 of `high` are "A"..."Z", bits 33...58 "a"..."z".
            let upper: UInt64 = 0x7FF_FFFE, lower = upper << 32
            return .bytes(low: low, high: high | (high & upper) << 32 | (high & lower) >> 32)
        }

        /// After a backslash: a punctuation character stands for itself; \d \D \w
        /// \W \s \S \h \H are classes; \t \n \r \f \v match nothing here.
        mutating func parseEscape(inClass: Bool) -> Node? {
            guard let byte = peek else { return nil }
            position += 1
            switch byte {
            case UInt8(ascii: "d"): return Self.set(Self.digits)
            case UInt8(ascii: "D"): return inClass ? nil : Self.complement(Self.set(Self.digits))
            case UInt8(ascii: "w"): return Self.set(Self.wordCharacters)
            case UInt8(ascii: "W"): return inClass ? nil : Self.complement(Self.set(Self.wordCharacters))
            // Whitespace: in printable ASCII only the space is.
            case UInt8(ascii: "s"), UInt8(ascii: "h"): return Self.single(0x20)
            case UInt8(ascii: "S"), UInt8(ascii: "H"): return inClass ? nil : Self.complement(Self.single(0x20))
            // Controls and vertical space, which no text given to bytes holds.
            case UInt8(ascii: "t"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "f"), UInt8(ascii: "v"):
                return .bytes(low: 0, high: 0)
            default:
                guard Self.escapable.contains(byte) else { return nil }
                return Self.single(byte)
            }
        }

        /// "[...]" and "[^...]" of ASCII characters, ranges and \d \w; nested
        /// brackets, POSIX names and set operations are left to Regex.
        mutating func parseClass() -> Node? {
            if Self.classReadsOtherwise(bytes, from: position) { return nil }
            let negated = consume(UInt8(ascii: "^"))
            var low: UInt64 = 0, high: UInt64 = 0
            var first = true
            while true {
                guard let byte = peek else { return nil }
                if byte == UInt8(ascii: "]"), !first { position += 1; break }
                if byte == UInt8(ascii: "]") || byte == UInt8(ascii: "[") { return nil }
                first = false
                // Set operations ("--", "&&", "~~") mean something inside Swift's classes.
                if position + 1 < bytes.count, bytes[position + 1] == byte,
                   byte == UInt8(ascii: "-") || byte == UInt8(ascii: "&") || byte == UInt8(ascii: "~") { return nil }
                let start: UInt8
                if byte == UInt8(ascii: "\\") {
                    position += 1
                    let letter = peek.map { ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") } ?? false
                    guard case let .bytes(l, h)? = parseEscape(inClass: true) else { return nil }
                    if letter {
                        // \d, \w, \s...: a class, not the start of a range.
                        low |= l; high |= h
                        if peek == UInt8(ascii: "-"), position + 1 < bytes.count, bytes[position + 1] != UInt8(ascii: "]") { return nil }
                        continue
                    }
                    start = l != 0 ? UInt8(l.trailingZeroBitCount) : UInt8(64 + h.trailingZeroBitCount)
                } else {
                    guard byte >= 0x20, byte < 0x7F else { return nil }
                    position += 1
                    start = byte
                }
                var end = start
                if peek == UInt8(ascii: "-"), position + 1 < bytes.count, bytes[position + 1] != UInt8(ascii: "]") {
                    position += 1
                    // "x--" would be a set subtraction to Regex.
                    guard let last = peek, last != UInt8(ascii: "\\"), last != UInt8(ascii: "["), last != UInt8(ascii: "-"),
                          last >= 0x20, last < 0x7F else { return nil }
                    position += 1
                    guard last >= start else { return nil }
                    end = last
                }
                for b in start ... end {
                    if b < 64 { low |= 1 << UInt64(b) } else { high |= 1 << UInt64(b - 64) }
                }
            }
            let members = folded(.bytes(low: low, high: high))
            return negated ? Self.complement(members) : members
        }

        /// True when Swift's Regex reads the class starting at `start` (after
        /// its "[") as more than members: "--", "&&" or "~~" anywhere in it
        /// (set operations, even where a range ends), or "[:" ... ":]" (a
        /// POSIX name). Such a class is left to Regex, which may refuse it.
        static func classReadsOtherwise(_ bytes: [UInt8], from start: Int) -> Bool {
            var i = start
            if i < bytes.count, bytes[i] == UInt8(ascii: "^") { i += 1 }
            let first = i
            var previous: UInt8?
            while i < bytes.count {
                let byte = bytes[i]
                if byte == UInt8(ascii: "\\") { previous = nil; i += 2; continue }
                if byte == UInt8(ascii: "]"), i > first { break }
                if byte == previous, byte == UInt8(ascii: "-") || byte == UInt8(ascii: "&") || byte == UInt8(ascii: "~") { return true }
                previous = byte
                i += 1
            }
            return first < bytes.count && bytes[first] == UInt8(ascii: ":") && i < bytes.count && bytes[i - 1] == UInt8(ascii: ":")
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard peek == byte else { return false }
            position += 1
            return true
        }

        /// As `CompiledRegex.literalPrefix`: punctuation that is sure to stand for itself.
        static let escapable = Set(".[](){}*+?|^$\\/-:=&%,@~_#!".utf8)
        static let digits = Array("0123456789".utf8)
        static let wordCharacters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_".utf8)

        static func single(_ byte: UInt8) -> Node { set([byte]) }

        static func set(_ members: [UInt8]) -> Node {
            var low: UInt64 = 0, high: UInt64 = 0
            for b in members { if b < 64 { low |= 1 << UInt64(b) } else { high |= 1 << UInt64(b - 64) } }
            return .bytes(low: low, high: high)
        }

        /// Every ASCII byte but these (the texts hold nothing else).
        static func complement(_ node: Node) -> Node {
            guard case let .bytes(low, high) = node else { return node }
            return .bytes(low: ~low, high: ~high)
        }
    }

    // MARK: Compiling

    /// Appends `node`'s instructions; false past `maximumInstructions`.
    static func emit(_ node: Node, into program: inout [Emitted]) -> Bool {
        guard program.count < maximumInstructions else { return false }
        switch node {
        case let .bytes(low, high):
            program.append(.byte(low: low, high: high))
        case .atStart:
            program.append(.atStart)
        case .atEnd:
            program.append(.atEnd)
        case let .sequence(items):
            for item in items { guard emit(item, into: &program) else { return false } }
        case let .group(inner, capture):
            if let capture { program.append(.save(2 * capture)) }
            guard emit(inner, into: &program) else { return false }
            if let capture { program.append(.save(2 * capture + 1)) }
        case let .alternation(branches):
            // split L1, next; L1: branch; jump end; next: ...
            var jumps: [Int] = []
            for (i, branch) in branches.enumerated() {
                if i < branches.count - 1 {
                    let split = program.count
                    program.append(.split(split + 1, -1))
                    guard emit(branch, into: &program) else { return false }
                    jumps.append(program.count)
                    program.append(.jump(-1))
                    program[split] = .split(split + 1, program.count)
                } else {
                    guard emit(branch, into: &program) else { return false }
                }
            }
            for j in jumps { program[j] = .jump(program.count) }
        case let .repeated(inner, minimum, maximum, greedy):
            for _ in 0 ..< minimum { guard emit(inner, into: &program) else { return false } }
            // Greedy tries one more first, lazy one fewer.
            func choice(more: Int, fewer: Int) -> Emitted { greedy ? .split(more, fewer) : .split(fewer, more) }
            if let maximum {
                // Each optional copy: split into it or past every one left.
                var splits: [Int] = []
                for _ in minimum ..< maximum {
                    splits.append(program.count)
                    program.append(.split(program.count + 1, -1))
                    guard emit(inner, into: &program) else { return false }
                }
                for s in splits { program[s] = choice(more: s + 1, fewer: program.count) }
            } else {
                // loop: split body, end; body; jump loop
                let loop = program.count
                program.append(.split(loop + 1, -1))
                // A body that can match nothing loops back without a byte;
                // the visited set of each position ends that path.
                guard emit(inner, into: &program) else { return false }
                program.append(.jump(loop))
                program[loop] = choice(more: loop + 1, fewer: program.count)
            }
        }
        return program.count <= maximumInstructions
    }
}

extension ByteMatcher {
    /// The longest run of bytes that every match of `pattern` contains, in
    /// lower case (a text holds it, in either case, or cannot match), when it
    /// is at least `minimumLength` long; nil when the pattern is outside the
    /// subset or has no such run (`^https?://[^/]+/` has "://" only, which
    /// every URL has: too short to be asked for). Runs are read from the parts
    /// every match goes through: the top-level sequence, groups without "|",
    /// and the first round of a repetition of at least one. A run found in
    /// "http://" or "https://" is passed over, since every URL has one.
    static func requiredLiteral(_ pattern: String, minimumLength: Int = 3) -> [UInt8]? {
        parse(pattern).flatMap { requiredLiteral(in: $0.0, minimumLength: minimumLength) }
    }

    static func requiredLiteral(in node: Node, minimumLength: Int = 3) -> [UInt8]? {
        var best: [UInt8] = [], run: [UInt8] = []
        // Every URL holds "http://" or "https://": a run inside them tells nothing.
        let everywhere = [Array("https://".utf8), Array("http://".utf8)]
        func flush() {
            if run.count > best.count, !everywhere.contains(where: { Self.contains($0, run) }) { best = run }
            run.removeAll()
        }
        func walk(_ node: Node) {
            switch node {
            case let .bytes(low, high):
                if let byte = Self.lowercaseByte(low: low, high: high) { run.append(byte) } else { flush() }
            case .atStart, .atEnd:
                // Zero width: the bytes on either side are still adjacent.
                break
            case let .sequence(items):
                for item in items { walk(item) }
            case let .group(inner, _):
                walk(inner)
            case .alternation:
                flush()
            case let .repeated(inner, minimum, maximum, _):
                guard minimum >= 1 else { flush(); return }
                // The first round is contiguous; what follows it may be another round.
                walk(inner)
                if maximum != 1 || minimum != 1 { flush() }
            }
        }
        walk(node)
        flush()
        return best.count >= minimumLength ? best : nil
    }

    static func contains(_ text: [UInt8], _ part: [UInt8]) -> Bool {
        guard part.count <= text.count else { return false }
        return (0 ... text.count - part.count).contains { text[$0 ..< $0 + part.count].elementsEqual(part) }
    }

    /// The byte a one-byte set stands for, lowercased; a letter's two cases
    /// (from "(?i)") count as the letter. Nil for any other set.
    static func lowercaseByte(low: UInt64, high: UInt64) -> UInt8? {
        let count = low.nonzeroBitCount + high.nonzeroBitCount
        let first = low != 0 ? UInt8(low.trailingZeroBitCount) : UInt8(64 + high.trailingZeroBitCount)
        if count == 1 {
            return first >= UInt8(ascii: "A") && first <= UInt8(ascii: "Z") ? first | 0x20 : first
        }
        // "A"..."Z" are bits 1...26 of `high`, "a"..."z" bits 33...58.
        guard count == 2, low == 0, first >= UInt8(ascii: "A"), first <= UInt8(ascii: "Z"),
              high == (1 << UInt64(first - 64)) | (1 << UInt64(first - 64 + 32)) else { return nil }
        return first | 0x20
    }
}
