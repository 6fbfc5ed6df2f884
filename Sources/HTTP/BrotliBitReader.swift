extension BrotliDecoder {
    /// The input as bits (RFC 7932 §1.5.1): bytes in order, each from its lowest
    /// bit. Up to 63 bits are held ahead in `bits`, the next one lowest; every
    /// read checks that the input had them, so a short stream throws instead of
    /// reading past its end.
    struct BitReader {
        let input: UnsafeRawBufferPointer
        /// The next byte not yet in `bits`.
        private(set) var position = 0
        private var bits: UInt64 = 0
        /// How many bits of `bits` are input (the bits above them are zero).
        private(set) var count = 0

        init(input: UnsafeRawBufferPointer) {
            self.input = input
        }

        /// Tops `bits` up to at least 56 bits, or to the end of the input.
        @inline(__always)
        mutating func refill() {
            if count > 56 { return }
            if input.count - position >= 8 {
                // Eight bytes in one load; only the whole bytes that fit are kept,
                // and the rest of the word is read again by the next refill.
                let word = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: position, as: UInt64.self))
                let taken = (63 - count) >> 3
                bits |= word << UInt64(count)
                count += taken << 3
                bits &= (1 << UInt64(count)) - 1
                position += taken
            } else {
                while count <= 56 && position < input.count {
                    bits |= UInt64(input[position]) << UInt64(count)
                    position += 1
                    count += 8
                }
            }
        }

        /// The next `n` (0...32) bits as a number, the first bit lowest (§1.5.1:
        /// numbers are packed from their least significant bit).
        @inline(__always)
        mutating func take(_ n: Int) throws(Failure) -> Int {
            if count < n {
                refill()
                guard count >= n else { throw Failure(reason: "brotli: truncated stream") }
            }
            let value = Int(truncatingIfNeeded: bits & ((1 << UInt64(n)) - 1))
            bits >>= UInt64(n)
            count -= n
            return value
        }

        /// The next bits without taking them: at least 15 unless the input ends
        /// first (the missing ones read as zeros; `count` says how many are real).
        @inline(__always)
        mutating func peek() -> UInt64 {
            if count < 15 { refill() }
            return bits
        }

        /// Drops `n` bits that `peek` showed, or throws when the input did not have them.
        @inline(__always)
        mutating func drop(_ n: Int) throws(Failure) {
            guard n <= count else { throw Failure(reason: "brotli: truncated stream") }
            bits >>= UInt64(n)
            count -= n
        }

        /// Skips to the next byte boundary and returns the bits skipped, which
        /// §9.2 requires to be zero wherever the format pads.
        mutating func alignToByte() -> Int {
            let skip = count & 7
            let padding = Int(truncatingIfNeeded: bits & ((1 << UInt64(skip)) - 1))
            bits >>= UInt64(skip)
            count -= skip
            return padding
        }

        /// The next `n` whole bytes (after `alignToByte`), read from the input
        /// directly: those held in `bits` are given back first.
        mutating func takeBytes(_ n: Int) throws(Failure) -> UnsafeRawBufferPointer {
            giveBackHeldBytes()
            guard n <= input.count - position else { throw Failure(reason: "brotli: truncated stream") }
            defer { position += n }
            return UnsafeRawBufferPointer(rebasing: input[position ..< position + n])
        }

        /// Whether every input byte has been read (after `alignToByte`).
        mutating func atEnd() -> Bool {
            giveBackHeldBytes()
            return position == input.count
        }

        private mutating func giveBackHeldBytes() {
            position -= count >> 3
            bits = 0
            count = 0
        }
    }
}
