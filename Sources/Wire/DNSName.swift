// Domain names on the wire (RFC 1035 §3.1, §4.1.4): labels of 1…63 octets,
// 255 octets in all counting length octets and the root, possibly ending in a
// compression pointer to an earlier name.
//
// Loop protection: a pointer must point strictly before the start of the run
// of labels that contains it (the name's own start, or the target of the
// previous pointer). Every jump therefore lands lower than the last, so the
// walk ends after at most one jump per earlier byte; and a forward or
// self-pointer is refused outright. Every compressor points back to an
// earlier occurrence, so no real message is refused by this.

/// Walking names in a message: once with full checks, then without.
public enum DNSWireName {
    /// The longest name in wire form, root octet included.
    public static let maximumLength = 255
    public static let maximumLabelLength = 63

    /// Validates the name at `offset` of `message` and returns the offset just
    /// past its bytes in place (after the root octet or the first pointer).
    public static func validate(_ message: UnsafeRawBufferPointer, at offset: Int) throws(WireError) -> Int {
        var position = offset
        var runStart = offset
        var end = -1
        var nameLength = 1 // the root octet
        while true {
            try require(position + 1, in: message, .dns)
            let octet = message.u8(position)
            switch octet & 0xc0 {
            case 0x00:
                if octet == 0 { return end >= 0 ? end : position + 1 }
                let labelEnd = position + 1 + Int(octet)
                try require(labelEnd, in: message, .dns)
                nameLength += 1 + Int(octet)
                guard nameLength <= maximumLength else { throw .malformed(layer: .dns, reason: .nameLength) }
                position = labelEnd
            case 0xc0:
                try require(position + 2, in: message, .dns)
                let target = Int(message.u16(position) & 0x3fff)
                guard target < message.count else { throw .malformed(layer: .dns, reason: .pointer) }
                guard target < runStart else { throw .malformed(layer: .dns, reason: .compressionLoop) }
                if end < 0 { end = position + 2 }
                runStart = target
                position = target
            default:
                // 0x40 and 0x80: a label longer than 63, or the extended label
                // types of RFC 2671 that RFC 6891 retired.
                throw .malformed(layer: .dns, reason: .labelLength)
            }
        }
    }

    /// The offset just past the name's bytes in place, for a name already
    /// validated. Never reads out of bounds, whatever the bytes.
    @inlinable
    public static func skip(_ message: UnsafeRawBufferPointer, at offset: Int) -> Int {
        var position = offset
        while position < message.count {
            let octet = message.u8(position)
            if octet & 0xc0 != 0 { return position + 2 }
            if octet == 0 { return position + 1 }
            position += 1 + Int(octet)
        }
        return message.count
    }
}

/// The labels of a name, pointers followed, the root not included.
/// Iterating never traps: it stops at anything a validated name cannot hold.
public struct DNSLabelSequence: Sequence {
    @usableFromInline let message: UnsafeRawBufferPointer
    @usableFromInline let offset: Int

    @inlinable
    public init(_ message: UnsafeRawBufferPointer, at offset: Int) {
        self.message = message
        self.offset = offset
    }

    public struct Iterator: IteratorProtocol {
        @usableFromInline let message: UnsafeRawBufferPointer
        @usableFromInline var position: Int
        @usableFromInline var runStart: Int

        @inlinable
        init(_ message: UnsafeRawBufferPointer, _ offset: Int) {
            self.message = message
            position = offset
            runStart = offset
        }

        @inlinable
        public mutating func next() -> UnsafeRawBufferPointer? {
            while position < message.count {
                let octet = message.u8(position)
                if octet == 0 { return nil }
                if octet & 0xc0 == 0 {
                    let start = position + 1, count = Int(octet)
                    guard start + count <= message.count else { return nil }
                    position = start + count
                    return message.sub(start, count)
                }
                guard octet & 0xc0 == 0xc0, position + 1 < message.count else { return nil }
                let target = Int(message.u16(position) & 0x3fff)
                // The same rule as validation, so that a loop ends here too.
                guard target < runStart else { return nil }
                runStart = target
                position = target
            }
            return nil
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(message, offset) }
}

@inlinable
func asciiLowercased(_ byte: UInt8) -> UInt8 {
    byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte
}

/// Compares two label sequences as RFC 4343 says: ASCII case folded, other bytes exact.
@inlinable
func labelsEqual(_ a: some Sequence<UnsafeRawBufferPointer>, _ b: some Sequence<UnsafeRawBufferPointer>) -> Bool {
    var ia = a.makeIterator(), ib = b.makeIterator()
    while true {
        switch (ia.next(), ib.next()) {
        case (nil, nil):
            return true
        case let (x?, y?):
            guard x.count == y.count else { return false }
            for i in 0 ..< x.count where asciiLowercased(x[i]) != asciiLowercased(y[i]) { return false }
        case (_?, nil), (nil, _?):
            return false
        }
    }
}

/// Appends one label in presentation form: "." and "\" escaped, bytes outside
/// printable ASCII as \DDD (RFC 1035 §5.1).
func appendPresentation(_ label: UnsafeRawBufferPointer, to text: inout String) {
    for byte in label {
        switch byte {
        case UInt8(ascii: "."), UInt8(ascii: "\\"):
            text.append("\\")
            text.append(Character(Unicode.Scalar(byte)))
        case 0x21 ... 0x7e:
            text.append(Character(Unicode.Scalar(byte)))
        default:
            let digits = String(byte)
            text += "\\" + String(repeating: "0", count: 3 - digits.count) + digits
        }
    }
}

/// A validated name inside a message, read in place. Comparison with a
/// dotted string or another name allocates nothing.
public struct DNSNameView: CustomStringConvertible {
    public let message: UnsafeRawBufferPointer
    /// Where the name starts in `message`.
    public let offset: Int

    @inlinable
    init(_ message: UnsafeRawBufferPointer, at offset: Int) {
        self.message = message
        self.offset = offset
    }

    @inlinable public var labels: DNSLabelSequence { DNSLabelSequence(message, at: offset) }

    @inlinable
    public var isRoot: Bool {
        var iterator = labels.makeIterator()
        return iterator.next() == nil
    }

    /// The uncompressed wire length, root octet included.
    @inlinable
    public var wireLength: Int {
        var length = 1
        for label in labels { length += 1 + label.count }
        return length
    }

    /// True when `dotted` ("www.example.test", with or without the final dot)
    /// names the same labels, ASCII case ignored. No escapes are understood:
    /// a label holding a "." byte matches no dotted text. "" and "." are the root.
    @inlinable
    public func matches(_ dotted: String) -> Bool {
        let utf8 = dotted.utf8
        let dot = UInt8(ascii: ".")
        var i = utf8.startIndex
        var end = utf8.endIndex
        if i != end, utf8[utf8.index(before: end)] == dot { end = utf8.index(before: end) }
        var first = true
        for label in labels {
            if !first {
                guard i != end, utf8[i] == dot else { return false }
                i = utf8.index(after: i)
            }
            first = false
            for byte in label {
                guard i != end, asciiLowercased(utf8[i]) == asciiLowercased(byte) else { return false }
                i = utf8.index(after: i)
            }
        }
        return i == end
    }

    /// Same labels, ASCII case ignored; the two may live in different messages.
    @inlinable
    public func matches(_ other: DNSNameView) -> Bool { labelsEqual(labels, other.labels) }

    /// Presentation form with the final dot, as tcpdump prints it: `example.test.`, or `.` for the root.
    public var description: String {
        var text = ""
        for label in labels {
            appendPresentation(label, to: &text)
            text += "."
        }
        return text.isEmpty ? "." : text
    }
}

/// A domain name as an owned value, for when a String or a dictionary key is
/// wanted. Holds the uncompressed wire form; equality and hashing ignore
/// ASCII case (RFC 4343).
public struct DNSName: Hashable, Sendable, CustomStringConvertible {
    /// Labels with their length octets, ending with the root's zero octet.
    public private(set) var wire: [UInt8]

    public static let root = DNSName(validatedWire: [0])

    init(validatedWire: [UInt8]) { wire = validatedWire }

    /// Parses dotted text ("www.example.test" or "www.example.test."); nil
    /// for an empty label, a label over 63 octets or a name over 255. No
    /// escapes are understood. "." and "" are the root.
    public init?(_ dotted: String) {
        var wire: [UInt8] = []
        var labelStart = 0
        wire.append(0)
        var text = dotted.utf8[...]
        if text.last == UInt8(ascii: ".") { text = text.dropLast() }
        if text.isEmpty { self.init(validatedWire: [0]); return }
        for byte in text {
            if byte == UInt8(ascii: ".") {
                let length = wire.count - labelStart - 1
                guard length >= 1 else { return nil }
                wire[labelStart] = UInt8(length)
                labelStart = wire.count
                wire.append(0)
            } else {
                wire.append(byte)
                guard wire.count - labelStart - 1 <= DNSWireName.maximumLabelLength else { return nil }
            }
        }
        let length = wire.count - labelStart - 1
        guard length >= 1 else { return nil }
        wire[labelStart] = UInt8(length)
        wire.append(0)
        guard wire.count <= DNSWireName.maximumLength else { return nil }
        self.init(validatedWire: wire)
    }

    /// Copies a name out of a message, pointers followed.
    public init(_ view: DNSNameView) {
        var wire: [UInt8] = []
        wire.reserveCapacity(view.wireLength)
        for label in view.labels {
            wire.append(UInt8(label.count))
            wire.append(contentsOf: label)
        }
        wire.append(0)
        self.init(validatedWire: wire)
    }

    /// Calls `body` with the labels, for writing or comparing without copying.
    public func withLabels<R>(_ body: (DNSLabelSequence) -> R) -> R {
        wire.withUnsafeBytes { body(DNSLabelSequence($0, at: 0)) }
    }

    public var labelCount: Int { withLabels { $0.reduce(0) { n, _ in n + 1 } } }

    public func matches(_ view: DNSNameView) -> Bool { withLabels { labelsEqual($0, view.labels) } }

    public static func == (a: DNSName, b: DNSName) -> Bool {
        a.wire.count == b.wire.count && zip(a.wire, b.wire).allSatisfy { asciiLowercased($0) == asciiLowercased($1) }
    }

    public func hash(into hasher: inout Hasher) {
        for byte in wire { hasher.combine(asciiLowercased(byte)) }
    }

    public var description: String {
        withLabels { labels in
            var text = ""
            for label in labels {
                appendPresentation(label, to: &text)
                text += "."
            }
            return text.isEmpty ? "." : text
        }
    }
}
