extension BrotliDecoder {
    /// RFC 7932's small fixed tables.
    enum Tables {
        /// §3.5: the order in which a complex prefix code gives the code length code's lengths.
        static let codeLengthOrder: [Int] = [1, 2, 3, 4, 0, 5, 17, 6, 16, 7, 8, 9, 10, 11, 12, 13, 14, 15]

        /// §6: block count codes 0...25, a base and how many extra bits follow.
        static let blockCountBase: [Int] = [
            1, 5, 9, 13, 17, 25, 33, 41, 49, 65, 81, 97, 113, 145, 177, 209,
            241, 305, 369, 497, 753, 1265, 2289, 4337, 8433, 16625,
        ]
        static let blockCountExtraBits: [Int] = [
            2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5,
            6, 6, 7, 8, 9, 10, 11, 12, 13, 24,
        ]

        /// §5: insert length codes 0...23, a base and how many extra bits follow.
        static let insertLengthBase: [Int] = [
            0, 1, 2, 3, 4, 5, 6, 8, 10, 14, 18, 26, 34, 50, 66, 98,
            130, 194, 322, 578, 1090, 2114, 6210, 22594,
        ]
        static let insertLengthExtraBits: [Int] = [
            0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5,
            6, 7, 8, 9, 10, 12, 14, 24,
        ]

        /// §5: copy length codes 0...23.
        static let copyLengthBase: [Int] = [
            2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 18, 22, 30, 38, 54,
            70, 102, 134, 198, 326, 582, 1094, 2118,
        ]
        static let copyLengthExtraBits: [Int] = [
            0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4,
            5, 5, 6, 7, 8, 9, 10, 24,
        ]

        /// One insert-and-copy length code (§5), looked up rather than worked out per command.
        struct InsertAndCopy {
            var insertBase: Int32
            var insertExtraBits: Int8
            var copyExtraBits: Int8
            /// Codes 0...127 reuse the last distance and read no distance code.
            var reusesLastDistance: Bool
            var copyBase: Int32
        }

        /// §5: the 704 insert-and-copy length codes. Each 64 codes name a range of 8
        /// insert length codes (bits 3...5 pick one) and 8 copy length codes (bits 0...2).
        static let insertAndCopy: [InsertAndCopy] = {
            // The first insert and copy length code of each block of 64, from §5's table.
            let insertRangeStart = [0, 0, 0, 0, 8, 8, 0, 16, 8, 16, 16]
            let copyRangeStart = [0, 8, 0, 8, 0, 8, 16, 0, 16, 8, 16]
            var codes: [InsertAndCopy] = []
            codes.reserveCapacity(704)
            for code in 0 ..< 704 {
                let block = code >> 6
                let insertCode = insertRangeStart[block] + ((code >> 3) & 7)
                let copyCode = copyRangeStart[block] + (code & 7)
                codes.append(InsertAndCopy(
                    insertBase: Int32(insertLengthBase[insertCode]),
                    insertExtraBits: Int8(insertLengthExtraBits[insertCode]),
                    copyExtraBits: Int8(copyLengthExtraBits[copyCode]),
                    reusesLastDistance: code < 128,
                    copyBase: Int32(copyLengthBase[copyCode])
                ))
            }
            return codes
        }()

        /// §7.1's Lut0 (UTF8 mode, by the last byte).
        static let utf8ByLast: [UInt8] = [
            0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 0, 0, 4, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            8, 12, 16, 12, 12, 20, 12, 16, 24, 28, 12, 12, 32, 12, 36, 12,
            44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 32, 32, 24, 40, 28, 12,
            12, 48, 52, 52, 52, 48, 52, 52, 52, 48, 52, 52, 52, 52, 52, 48,
            52, 52, 52, 52, 52, 48, 52, 52, 52, 52, 52, 24, 12, 28, 12, 12,
            12, 56, 60, 60, 60, 56, 60, 60, 60, 56, 60, 60, 60, 60, 60, 56,
            60, 60, 60, 60, 60, 56, 60, 60, 60, 60, 60, 24, 12, 28, 12, 0,
            0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
            0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
            0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
            0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
            2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
            2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
            2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
            2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
        ]

        /// §7.1's Lut1 (UTF8 mode, by the byte before the last).
        static let utf8ByBeforeLast: [UInt8] = [
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1,
            1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
            2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1,
            1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
            3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
            2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
        ]

        /// §7.1's Lut2 (Signed mode, for both bytes): a signed byte's rough magnitude.
        static let signed: [UInt8] = [
            0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
            2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
            2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
            3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
            3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
            3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
            3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
            4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
            4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
            4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
            4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
            5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
            5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
            5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
            6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 7,
        ]

        /// §7.1's four context modes as one table: for mode m, the literal's
        /// context ID is `context[m * 512 + p1] | context[m * 512 + 256 + p2]`,
        /// p1 the last byte and p2 the one before. LSB6 (0) and MSB6 (1) look at
        /// p1 only, UTF8 (2) is Lut0[p1] | Lut1[p2], Signed (3) Lut2[p1] << 3 | Lut2[p2].
        static let context: [UInt8] = {
            var table = [UInt8](repeating: 0, count: 4 * 512)
            for byte in 0 ..< 256 {
                table[byte] = UInt8(byte & 0x3F)
                table[512 + byte] = UInt8(byte >> 2)
                table[1024 + byte] = utf8ByLast[byte]
                table[1024 + 256 + byte] = utf8ByBeforeLast[byte]
                table[1536 + byte] = signed[byte] << 3
                table[1536 + 256 + byte] = signed[byte]
            }
            return table
        }()
    }
}
