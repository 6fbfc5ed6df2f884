/// "Does this pattern match anywhere in this text", answered over bytes for the
/// plain regexes profiles use (`^https?://[a-z0-9.-]+\.test/api/`), without
/// Swift's `Regex`, which costs about a microsecond a URL even when the
/// answer is no.
///
/// It runs a Thompson automaton in lock step over the text (a Pike VM with no
/// captures): time linear in the text whatever the pattern, so no pattern can
/// make a request slow. Only a subset is compiled: literals and the usual
/// escapes, `.`, bracket classes of ASCII characters and ranges, `\d \D \w \W`,
/// groups (capturing or `(?:`), `|`, the quantifiers `* + ? {n} {n,} {n,m}`
/// (lazy or not: the answer is the same), `^ $`, and "(?i)" at the very
/// start. Anything else, such as other flags, lookaround, backreferences,
/// `\s`, `\b` or a class with set operations, is left to `Regex`, as is any
/// text with a byte that is not
/// printable ASCII: there Swift's Characters (canonical equivalence,
/// "\r\n" as one) and line rules differ from bytes. On the rest the two agree,
/// which `ByteMatcherTests` checks against `Regex` on generated patterns.
struct ByteMatcher: Sendable {
    enum Instruction: Sendable {
        /// One byte in the set (a bitmap over 0..<128).
        case byte(low: UInt64, high: UInt64)
        case split(Int, Int)
        case jump(Int)
        case atStart
        case atEnd
        case match
    }

    let program: [Instruction]

    /// Nil when the pattern is outside the subset (or too large, past
    /// `maximumInstructions`, from counted repetition).
    init?(_ pattern: String) {
        var parser = Parser(bytes: Array(pattern.utf8))
        // "(?i)" in front, the one flag profiles write: both cases of each letter.
        if parser.bytes.starts(with: Array("(?i)".utf8)) {
            parser.caseInsensitive = true
            parser.position = 4
        }
        guard let node = parser.parseAlternation(), parser.position == parser.bytes.count else { return nil }
        var program: [Instruction] = []
        guard Self.emit(node, into: &program) else { return nil }
        program.append(.match)
        self.program = program
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
        // Printable ASCII only: newlines (and \v, \f, which Swift counts as
        // such for "." and "$") and anything beyond ASCII go to Regex.
        for byte in bytes where byte < 0x20 || byte > 0x7E { return nil }
        var current = ThreadList(capacity: program.count)
        var next = ThreadList(capacity: program.count)
        var position = 0
        while true {
            // A search: a new thread starts at every position.
            if add(0, at: position, count: bytes.count, to: &current) { return true }
            if position == bytes.count { return false }
            let byte = bytes[position]
            next.clear()
            for pc in current.threads {
                guard case let .byte(low, high) = program[pc] else { continue }
                let bit = byte < 64 ? low >> UInt64(byte) & 1 : high >> UInt64(byte - 64) & 1
                if bit == 1, add(pc + 1, at: position + 1, count: bytes.count, to: &next) { return true }
            }
            swap(&current, &next)
            position += 1
        }
    }

    /// Follows jumps, splits and assertions from `pc` at `position`; true if
    /// the match state is reached.
    private func add(_ pc: Int, at position: Int, count: Int, to list: inout ThreadList) -> Bool {
        guard list.insert(pc) else { return false }
        switch program[pc] {
        case .byte:
            list.threads.append(pc)
            return false
        case let .split(a, b):
            return add(a, at: position, count: count, to: &list) || add(b, at: position, count: count, to: &list)
        case let .jump(target):
            return add(target, at: position, count: count, to: &list)
        case .atStart:
            return position == 0 && add(pc + 1, at: position, count: count, to: &list)
        case .atEnd:
            return position == count && add(pc + 1, at: position, count: count, to: &list)
        case .match:
            return true
        }
    }

    /// The threads waiting on a byte, and which instructions were visited at this position.
    struct ThreadList {
        var threads: [Int] = []
        private var seen: [UInt32]
        private var generation: UInt32 = 1

        init(capacity: Int) {
            seen = Array(repeating: 0, count: capacity)
            threads.reserveCapacity(capacity)
        }

        mutating func clear() {
            threads.removeAll(keepingCapacity: true)
            generation &+= 1
            if generation == 0 {
                for i in seen.indices { seen[i] = 0 }
                generation = 1
            }
        }

        /// False if `pc` was visited already at this position.
        mutating func insert(_ pc: Int) -> Bool {
            if seen[pc] == generation { return false }
            seen[pc] = generation
            return true
        }
    }

    // MARK: Parsing

    indirect enum Node {
        case bytes(low: UInt64, high: UInt64)
        case atStart
        case atEnd
        case sequence([Node])
        case alternation([Node])
        case repeated(Node, minimum: Int, maximum: Int?)
    }

    struct Parser {
        let bytes: [UInt8]
        var position = 0
        /// Groups open around the current position; past 32 the pattern is
        /// left to Regex, so the recursion here stays shallow whatever the input.
        var depth = 0
        var caseInsensitive = false

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
                    // A lazy quantifier gives the same yes or no; a possessive one ("+") does not.
                    _ = consume(UInt8(ascii: "?"))
                    if peek == UInt8(ascii: "+") { return nil }
                    // Stacked quantifiers ("a**") mean different things in different engines.
                    if case .repeated = atom { return nil }
                    atom = .repeated(atom, minimum: minimum, maximum: maximum)
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
                if consume(UInt8(ascii: "?")) { guard consume(UInt8(ascii: ":")) else { return nil } }
                guard depth < 32 else { return nil }
                depth += 1
                defer { depth -= 1 }
                guard let inner = parseAlternation(), consume(UInt8(ascii: ")")) else { return nil }
                // Wrapped, so that "(a+)*" is not taken for a stacked "a+*".
                return .sequence([inner])
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

        /// After a backslash: a punctuation character stands for itself; \d \D \w \W are classes.
        mutating func parseEscape(inClass: Bool) -> Node? {
            guard let byte = peek else { return nil }
            position += 1
            switch byte {
            case UInt8(ascii: "d"): return Self.set(Self.digits)
            case UInt8(ascii: "D"): return inClass ? nil : Self.complement(Self.set(Self.digits))
            case UInt8(ascii: "w"): return Self.set(Self.wordCharacters)
            case UInt8(ascii: "W"): return inClass ? nil : Self.complement(Self.set(Self.wordCharacters))
            default:
                guard Self.escapable.contains(byte) else { return nil }
                return Self.single(byte)
            }
        }

        /// "[...]" and "[^...]" of ASCII characters, ranges and \d \w; nested
        /// brackets, POSIX names and set operations are left to Regex.
        mutating func parseClass() -> Node? {
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
                    guard case let .bytes(l, h)? = parseEscape(inClass: true) else { return nil }
                    if l.nonzeroBitCount + h.nonzeroBitCount != 1 {
                        // \d or \w: not the start of a range.
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
                    guard let last = peek, last != UInt8(ascii: "\\"), last != UInt8(ascii: "["), last >= 0x20, last < 0x7F else { return nil }
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
    static func emit(_ node: Node, into program: inout [Instruction]) -> Bool {
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
        case let .repeated(inner, minimum, maximum):
            for _ in 0 ..< minimum { guard emit(inner, into: &program) else { return false } }
            if let maximum {
                // Each optional copy: split into it or past every one left.
                var splits: [Int] = []
                for _ in minimum ..< maximum {
                    splits.append(program.count)
                    program.append(.split(program.count + 1, -1))
                    guard emit(inner, into: &program) else { return false }
                }
                for s in splits { program[s] = .split(s + 1, program.count) }
            } else {
                // loop: split body, end; body; jump loop
                let loop = program.count
                program.append(.split(loop + 1, -1))
                // A body that can match nothing loops back without a byte;
                // the visited set of each position ends that path.
                guard emit(inner, into: &program) else { return false }
                program.append(.jump(loop))
                program[loop] = .split(loop + 1, program.count)
            }
        }
        return program.count <= maximumInstructions
    }
}
