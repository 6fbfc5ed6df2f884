extension BrotliDecoder {
    /// One of RFC 7932 §8's word transforms: prefix + T(word) + suffix.
    struct Transform: Sendable {
        /// §8's 21 elementary transforms T (OmitFirst8 is defined but no transform uses it).
        enum Kind: Sendable {
            case identity
            /// FermentFirst: the first character upper-cased, the RFC's way (see `ferment`).
            case fermentFirst
            /// FermentAll: every character upper-cased.
            case fermentAll
            /// The word without its first n (1...9) bytes.
            case omitFirst(Int)
            /// The word without its last n (1...9) bytes.
            case omitLast(Int)
        }

        let prefix: [UInt8]
        let kind: Kind
        let suffix: [UInt8]

        init(_ prefix: String, _ kind: Kind, _ suffix: String) {
            self.prefix = Array(prefix.utf8)
            self.kind = kind
            self.suffix = Array(suffix.utf8)
        }

        /// How many bytes the transformed `length`-byte word takes.
        func outputLength(wordLength length: Int) -> Int {
            prefix.count + kept(wordLength: length).count + suffix.count
        }

        /// The part of a `length`-byte word that T keeps.
        private func kept(wordLength length: Int) -> Range<Int> {
            switch kind {
            case .identity, .fermentFirst, .fermentAll: 0 ..< length
            case .omitFirst(let n): min(n, length) ..< length
            case .omitLast(let n): 0 ..< max(length - n, 0)
            }
        }

        /// Writes the transformed word, `word` being its range in the
        /// dictionary, at `output[start...]` (room for `outputLength` bytes made by the caller).
        func apply(word: Range<Int>, dictionary: [UInt8], to output: inout [UInt8], at start: Int) {
            var at = start
            for byte in prefix {
                output[at] = byte
                at += 1
            }
            let kept = kept(wordLength: word.count)
            let wordStart = at
            for index in word.lowerBound + kept.lowerBound ..< word.lowerBound + kept.upperBound {
                output[at] = dictionary[index]
                at += 1
            }
            switch kind {
            case .identity, .omitFirst, .omitLast:
                break
            case .fermentFirst:
                if at > wordStart { _ = Self.ferment(&output, at: wordStart, end: at) }
            case .fermentAll:
                var position = wordStart
                // Each step moves 1 to 3 bytes on, so at most the word's length steps.
                while position < at {
                    position += Self.ferment(&output, at: position, end: at)
                }
            }
            for byte in suffix {
                output[at] = byte
                at += 1
            }
        }

        /// §8's Ferment: upper-cases an ASCII letter, and for a two or three
        /// byte UTF-8 sequence flips a bit of its second or third byte (which
        /// changes the case of many Latin, Greek and Cyrillic letters); returns how
        /// far the next character is.
        private static func ferment(_ word: inout [UInt8], at position: Int, end: Int) -> Int {
            let byte = word[position]
            if byte < 192 {
                if byte >= 97 && byte <= 122 { word[position] = byte ^ 32 }
                return 1
            }
            if byte < 224 {
                if position + 1 < end { word[position + 1] ^= 32 }
                return 2
            }
            if position + 2 < end { word[position + 2] ^= 5 }
            return 3
        }

        /// RFC 7932 Appendix B: the 121 transforms, by transform ID.
        static let all: [Transform] = [
            Transform("", .identity, ""),
            Transform("", .identity, " "),
            Transform(" ", .identity, " "),
            Transform("", .omitFirst(1), ""),
            Transform("", .fermentFirst, " "),
            Transform("", .identity, " the "),
            Transform(" ", .identity, ""),
            Transform("s ", .identity, " "),
            Transform("", .identity, " of "),
            Transform("", .fermentFirst, ""),
            Transform("", .identity, " and "),
            Transform("", .omitFirst(2), ""),
            Transform("", .omitLast(1), ""),
            Transform(", ", .identity, " "),
            Transform("", .identity, ", "),
            Transform(" ", .fermentFirst, " "),
            Transform("", .identity, " in "),
            Transform("", .identity, " to "),
            Transform("e ", .identity, " "),
            Transform("", .identity, "\""),
            Transform("", .identity, "."),
            Transform("", .identity, "\">"),
            Transform("", .identity, "\n"),
            Transform("", .omitLast(3), ""),
            Transform("", .identity, "]"),
            Transform("", .identity, " for "),
            Transform("", .omitFirst(3), ""),
            Transform("", .omitLast(2), ""),
            Transform("", .identity, " a "),
            Transform("", .identity, " that "),
            Transform(" ", .fermentFirst, ""),
            Transform("", .identity, ". "),
            Transform(".", .identity, ""),
            Transform(" ", .identity, ", "),
            Transform("", .omitFirst(4), ""),
            Transform("", .identity, " with "),
            Transform("", .identity, "'"),
            Transform("", .identity, " from "),
            Transform("", .identity, " by "),
            Transform("", .omitFirst(5), ""),
            Transform("", .omitFirst(6), ""),
            Transform(" the ", .identity, ""),
            Transform("", .omitLast(4), ""),
            Transform("", .identity, ". The "),
            Transform("", .fermentAll, ""),
            Transform("", .identity, " on "),
            Transform("", .identity, " as "),
            Transform("", .identity, " is "),
            Transform("", .omitLast(7), ""),
            Transform("", .omitLast(1), "ing "),
            Transform("", .identity, "\n\t"),
            Transform("", .identity, ":"),
            Transform(" ", .identity, ". "),
            Transform("", .identity, "ed "),
            Transform("", .omitFirst(9), ""),
            Transform("", .omitFirst(7), ""),
            Transform("", .omitLast(6), ""),
            Transform("", .identity, "("),
            Transform("", .fermentFirst, ", "),
            Transform("", .omitLast(8), ""),
            Transform("", .identity, " at "),
            Transform("", .identity, "ly "),
            Transform(" the ", .identity, " of "),
            Transform("", .omitLast(5), ""),
            Transform("", .omitLast(9), ""),
            Transform(" ", .fermentFirst, ", "),
            Transform("", .fermentFirst, "\""),
            Transform(".", .identity, "("),
            Transform("", .fermentAll, " "),
            Transform("", .fermentFirst, "\">"),
            Transform("", .identity, "=\""),
            Transform(" ", .identity, "."),
            Transform(".com/", .identity, ""),
            Transform(" the ", .identity, " of the "),
            Transform("", .fermentFirst, "'"),
            Transform("", .identity, ". This "),
            Transform("", .identity, ","),
            Transform(".", .identity, " "),
            Transform("", .fermentFirst, "("),
            Transform("", .fermentFirst, "."),
            Transform("", .identity, " not "),
            Transform(" ", .identity, "=\""),
            Transform("", .identity, "er "),
            Transform(" ", .fermentAll, " "),
            Transform("", .identity, "al "),
            Transform(" ", .fermentAll, ""),
            Transform("", .identity, "='"),
            Transform("", .fermentAll, "\""),
            Transform("", .fermentFirst, ". "),
            Transform(" ", .identity, "("),
            Transform("", .identity, "ful "),
            Transform(" ", .fermentFirst, ". "),
            Transform("", .identity, "ive "),
            Transform("", .identity, "less "),
            Transform("", .fermentAll, "'"),
            Transform("", .identity, "est "),
            Transform(" ", .fermentFirst, "."),
            Transform("", .fermentAll, "\">"),
            Transform(" ", .identity, "='"),
            Transform("", .fermentFirst, ","),
            Transform("", .identity, "ize "),
            Transform("", .fermentAll, "."),
            Transform("\u{A0}", .identity, ""),
            Transform(" ", .identity, ","),
            Transform("", .fermentFirst, "=\""),
            Transform("", .fermentAll, "=\""),
            Transform("", .identity, "ous "),
            Transform("", .fermentAll, ", "),
            Transform("", .fermentFirst, "='"),
            Transform(" ", .fermentFirst, ","),
            Transform(" ", .fermentAll, "=\""),
            Transform(" ", .fermentAll, ", "),
            Transform("", .fermentAll, ","),
            Transform("", .fermentAll, "("),
            Transform("", .fermentAll, ". "),
            Transform(" ", .fermentAll, "."),
            Transform("", .fermentAll, "='"),
            Transform(" ", .fermentAll, ". "),
            Transform(" ", .fermentFirst, "=\""),
            Transform(" ", .fermentAll, "='"),
            Transform(" ", .fermentFirst, "='"),
        ]
    }
}
