// TCP options (RFC 9293 §3.2, RFC 7323 for window scale and timestamps,
// RFC 2018 for SACK). Parsing a header's options fills a `TCPOptions` value
// with no heap allocation: the SACK blocks live in a fixed four-slot store,
// which is all a 40-byte option area can hold.

/// One SACK block: the sequence space [left, right) that the receiver holds.
public struct TCPSackBlock: Hashable, Sendable, CustomStringConvertible {
    public var left: SequenceNumber
    public var right: SequenceNumber

    @inlinable
    public init(left: SequenceNumber, right: SequenceNumber) {
        self.left = left
        self.right = right
    }

    public var description: String { "{\(left):\(right)}" }
}

/// Up to four SACK blocks, stored inline. Four is the most that fit in the
/// 40-byte option area (2 + 4 × 8 = 34 bytes), so no valid segment carries more.
public struct TCPSackBlocks: RandomAccessCollection, Hashable, Sendable, CustomStringConvertible {
    public static let capacity = 4

    @usableFromInline var storage: (TCPSackBlock, TCPSackBlock, TCPSackBlock, TCPSackBlock)
    @usableFromInline var used: Int

    @inlinable public var count: Int { used }

    @inlinable
    public init() {
        let empty = TCPSackBlock(left: SequenceNumber(0), right: SequenceNumber(0))
        storage = (empty, empty, empty, empty)
        used = 0
    }

    /// Up to four blocks; more is a programming error, like indexing past an array.
    public init(_ blocks: some Sequence<TCPSackBlock>) {
        self.init()
        for block in blocks { append(block) }
    }

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { count }
    @inlinable public var isFull: Bool { count == Self.capacity }

    @inlinable
    public subscript(position: Int) -> TCPSackBlock {
        get {
            precondition(position >= 0 && position < count, "SACK block index out of range")
            switch position {
            case 0: return storage.0
            case 1: return storage.1
            case 2: return storage.2
            default: return storage.3
            }
        }
        set {
            precondition(position >= 0 && position < count, "SACK block index out of range")
            switch position {
            case 0: storage.0 = newValue
            case 1: storage.1 = newValue
            case 2: storage.2 = newValue
            default: storage.3 = newValue
            }
        }
    }

    /// Appends a block. Check `isFull` first: a fifth block cannot be sent.
    @inlinable
    public mutating func append(_ block: TCPSackBlock) {
        precondition(count < Self.capacity, "at most four SACK blocks fit in a TCP header")
        used += 1
        self[used - 1] = block
    }

    @inlinable
    public mutating func removeAll() { self = TCPSackBlocks() }

    /// Only the blocks in use take part; unused slots are always zero anyway.
    public static func == (a: TCPSackBlocks, b: TCPSackBlocks) -> Bool {
        a.count == b.count && a.elementsEqual(b)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for block in self { hasher.combine(block) }
    }

    public var description: String {
        var text = ""
        for block in self { text += block.description }
        return text
    }
}

/// The timestamps option (RFC 7323 §3): TSval and TSecr.
public struct TCPTimestamps: Hashable, Sendable, CustomStringConvertible {
    public var value: UInt32
    public var echoReply: UInt32

    @inlinable
    public init(value: UInt32, echoReply: UInt32) {
        self.value = value
        self.echoReply = echoReply
    }

    public var description: String { "TS val \(value) ecr \(echoReply)" }
}

/// One option as it appears on the wire, in wire order. `TCPView.optionList`
/// yields these so a trace shows exactly what a peer sent, padding included.
public enum TCPOption: Hashable, Sendable, CustomStringConvertible {
    public enum Kind {
        public static let endOfList: UInt8 = 0
        public static let noOperation: UInt8 = 1
        public static let maximumSegmentSize: UInt8 = 2
        public static let windowScale: UInt8 = 3
        public static let sackPermitted: UInt8 = 4
        public static let sack: UInt8 = 5
        public static let timestamps: UInt8 = 8
    }

    case endOfList
    case noOperation
    case maximumSegmentSize(UInt16)
    case windowScale(UInt8)
    case sackPermitted
    case sack(TCPSackBlocks)
    case timestamps(TCPTimestamps)
    /// An option Sluice does not interpret, skipped by its length.
    case unknown(kind: UInt8, length: UInt8)

    /// Bytes on the wire, kind and length octets included.
    public var encodedLength: Int {
        switch self {
        case .endOfList, .noOperation: return 1
        case .maximumSegmentSize: return 4
        case .windowScale: return 3
        case .sackPermitted: return 2
        case let .sack(blocks): return 2 + 8 * blocks.count
        case .timestamps: return 10
        // Decoding never yields a length below 2; a hand-made value still
        // gets room for its kind and length octets.
        case let .unknown(_, length): return max(Int(length), 2)
        }
    }

    /// tcpdump's spelling.
    public var description: String {
        switch self {
        case .endOfList: return "eol"
        case .noOperation: return "nop"
        case let .maximumSegmentSize(mss): return "mss \(mss)"
        case let .windowScale(shift): return "wscale \(shift)"
        case .sackPermitted: return "sackOK"
        case let .sack(blocks): return "sack \(blocks.count) \(blocks)"
        case let .timestamps(ts): return ts.description
        case let .unknown(kind, _): return "unknown-\(kind)"
        }
    }

    /// Decodes the option at `offset` in an option area and returns it with
    /// the offset of the next one. Rejects a length octet below 2, one that
    /// runs past the area, and a known option whose length is not its own.
    @usableFromInline
    static func decode(_ area: UnsafeRawBufferPointer, at offset: Int) throws(WireError) -> (TCPOption, Int) {
        let kind = area.u8(offset)
        if kind == Kind.endOfList { return (.endOfList, offset + 1) }
        if kind == Kind.noOperation { return (.noOperation, offset + 1) }
        guard offset + 1 < area.count else { throw .malformed(layer: .tcp, reason: .optionLength) }
        let length = Int(area.u8(offset + 1))
        guard length >= 2, offset + length <= area.count else {
            throw .malformed(layer: .tcp, reason: .optionLength)
        }
        let next = offset + length
        switch kind {
        case Kind.maximumSegmentSize:
            guard length == 4 else { throw .malformed(layer: .tcp, reason: .optionLength) }
            return (.maximumSegmentSize(area.u16(offset + 2)), next)
        case Kind.windowScale:
            guard length == 3 else { throw .malformed(layer: .tcp, reason: .optionLength) }
            return (.windowScale(area.u8(offset + 2)), next)
        case Kind.sackPermitted:
            guard length == 2 else { throw .malformed(layer: .tcp, reason: .optionLength) }
            return (.sackPermitted, next)
        case Kind.sack:
            let blockCount = (length - 2) / 8
            guard (length - 2) % 8 == 0, blockCount >= 1, blockCount <= TCPSackBlocks.capacity else {
                throw .malformed(layer: .tcp, reason: .optionLength)
            }
            var blocks = TCPSackBlocks()
            for i in 0 ..< blockCount {
                let at = offset + 2 + 8 * i
                blocks.append(TCPSackBlock(left: SequenceNumber(area.u32(at)), right: SequenceNumber(area.u32(at + 4))))
            }
            return (.sack(blocks), next)
        case Kind.timestamps:
            guard length == 10 else { throw .malformed(layer: .tcp, reason: .optionLength) }
            return (.timestamps(TCPTimestamps(value: area.u32(offset + 2), echoReply: area.u32(offset + 6))), next)
        default:
            return (.unknown(kind: kind, length: UInt8(length)), next)
        }
    }

    /// Writes the option at `offset`; the caller has checked the room.
    /// An unknown option's body is written as zeros: Sluice never sends one.
    @usableFromInline
    func write(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        switch self {
        case .endOfList:
            buffer.setU8(offset, Kind.endOfList)
        case .noOperation:
            buffer.setU8(offset, Kind.noOperation)
        case let .maximumSegmentSize(mss):
            buffer.setU8(offset, Kind.maximumSegmentSize)
            buffer.setU8(offset + 1, 4)
            buffer.setU16(offset + 2, mss)
        case let .windowScale(shift):
            buffer.setU8(offset, Kind.windowScale)
            buffer.setU8(offset + 1, 3)
            buffer.setU8(offset + 2, shift)
        case .sackPermitted:
            buffer.setU8(offset, Kind.sackPermitted)
            buffer.setU8(offset + 1, 2)
        case let .sack(blocks):
            buffer.setU8(offset, Kind.sack)
            buffer.setU8(offset + 1, UInt8(2 + 8 * blocks.count))
            for (i, block) in blocks.enumerated() {
                buffer.setU32(offset + 2 + 8 * i, block.left.rawValue)
                buffer.setU32(offset + 6 + 8 * i, block.right.rawValue)
            }
        case let .timestamps(ts):
            buffer.setU8(offset, Kind.timestamps)
            buffer.setU8(offset + 1, 10)
            buffer.setU32(offset + 2, ts.value)
            buffer.setU32(offset + 6, ts.echoReply)
        case let .unknown(kind, _):
            buffer.setU8(offset, kind)
            buffer.setU8(offset + 1, UInt8(encodedLength))
            for i in 2 ..< encodedLength { buffer.setU8(offset + i, 0) }
        }
        return offset + encodedLength
    }
}

/// The options of a validated header in wire order. Iteration cannot fail:
/// `TCPView` has walked the same bytes once already.
public struct TCPOptionSequence: Sequence {
    @usableFromInline let area: UnsafeRawBufferPointer

    @inlinable init(_ area: UnsafeRawBufferPointer) { self.area = area }

    public struct Iterator: IteratorProtocol {
        @usableFromInline let area: UnsafeRawBufferPointer
        @usableFromInline var offset = 0

        @inlinable init(_ area: UnsafeRawBufferPointer) { self.area = area }

        @inlinable
        public mutating func next() -> TCPOption? {
            guard offset < area.count, let (option, next) = try? TCPOption.decode(area, at: offset) else { return nil }
            // Whatever follows End of Option List is padding, not options.
            offset = option == .endOfList ? area.count : next
            return option
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(area) }
}

/// The options Sluice understands, decoded. Absent options are nil (or
/// false, or no SACK blocks); unknown ones are skipped by their length.
public struct TCPOptions: Hashable, Sendable, CustomStringConvertible {
    /// The largest option area: a data offset of 15 words less the fixed 20 bytes.
    public static let maximumLength = 40

    public var maximumSegmentSize: UInt16?
    public var windowScale: UInt8?
    public var sackPermitted: Bool
    public var timestamps: TCPTimestamps?
    public var sackBlocks: TCPSackBlocks

    @inlinable
    public init(maximumSegmentSize: UInt16? = nil, windowScale: UInt8? = nil, sackPermitted: Bool = false,
                timestamps: TCPTimestamps? = nil, sackBlocks: TCPSackBlocks = TCPSackBlocks()) {
        self.maximumSegmentSize = maximumSegmentSize
        self.windowScale = windowScale
        self.sackPermitted = sackPermitted
        self.timestamps = timestamps
        self.sackBlocks = sackBlocks
    }

    /// Decodes an option area (the bytes between offset 20 and the data
    /// offset). A later copy of an option overrides an earlier one.
    public init(parsing area: UnsafeRawBufferPointer) throws(WireError) {
        self.init()
        var offset = 0
        while offset < area.count {
            let (option, next) = try TCPOption.decode(area, at: offset)
            switch option {
            case .endOfList: return
            case .noOperation, .unknown: break
            case let .maximumSegmentSize(mss): maximumSegmentSize = mss
            case let .windowScale(shift): windowScale = shift
            case .sackPermitted: sackPermitted = true
            case let .sack(blocks): sackBlocks = blocks
            case let .timestamps(ts): timestamps = ts
            }
            offset = next
        }
    }

    @inlinable public var isEmpty: Bool { encodedLength == 0 }

    /// The option area `emit` writes, padding included; a multiple of 4.
    public var encodedLength: Int {
        var length = maximumSegmentSize == nil ? 0 : 4
        if timestamps != nil { length += 12 } else if sackPermitted { length += 4 }
        if windowScale != nil { length += 4 }
        if !sackBlocks.isEmpty { length += 4 + 8 * sackBlocks.count }
        return length
    }

    /// Calls `body` with each option in the layout Linux sends
    /// (tcp_options_write): mss; sackOK and TS packed together, or a NOP pair
    /// in front of whichever is alone; NOP, wscale; NOP, NOP, SACK blocks.
    /// Each group is a multiple of 4 bytes, so no trailing padding is needed.
    public func forEachOption(_ body: (TCPOption) -> Void) {
        if let mss = maximumSegmentSize { body(.maximumSegmentSize(mss)) }
        if let ts = timestamps {
            if sackPermitted { body(.sackPermitted) } else { body(.noOperation); body(.noOperation) }
            body(.timestamps(ts))
        } else if sackPermitted {
            body(.noOperation); body(.noOperation); body(.sackPermitted)
        }
        if let shift = windowScale { body(.noOperation); body(.windowScale(shift)) }
        if !sackBlocks.isEmpty {
            body(.noOperation); body(.noOperation); body(.sack(sackBlocks))
        }
    }

    /// Writes the option area at the start of `buffer` and returns its length.
    /// Throws when the options would not fit in 40 bytes or in `buffer`.
    public func emit(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        let length = encodedLength
        guard length <= Self.maximumLength else { throw .malformed(layer: .tcp, reason: .optionLength) }
        try require(length, in: buffer, .tcp)
        var offset = 0
        forEachOption { offset = $0.write(into: buffer, at: offset) }
        return offset
    }

    /// tcpdump's list without the brackets, in the order `emit` writes:
    /// `mss 1460,sackOK,TS val 1 ecr 0,nop,wscale 7`.
    public var description: String {
        var text = ""
        forEachOption { option in
            if !text.isEmpty { text += "," }
            text += option.description
        }
        return text
    }
}
