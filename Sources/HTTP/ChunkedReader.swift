/// Walks a chunked body (RFC 9112 §7.1) byte by byte through its framing and
/// in bulk through chunk data, without copying: it only counts how many
/// bytes belong to the body. Framing is strict (CRLF only, no bare LF),
/// since the server reads the same bytes and must find the same end.
struct ChunkedReader: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        case size
        /// After the size: optional whitespace, then `;ext` until CR.
        case extensions
        case sizeLineFeed
        case data
        case dataCarriageReturn
        case dataLineFeed
        case trailerLineStart
        case trailerLine
        case trailerLineFeed
        case finalLineFeed
        case done
    }

    private(set) var phase = Phase.size
    private var digits = 0
    private var size = 0
    private var remaining = 0
    private var lineBytes = 0
    private var sawSemicolon = false
    private var trailerBytes = 0
    private var trailerSawColon = false
    /// With `keepsTrailers`, the trailer section's lines as they came (each
    /// ending in CR LF), for a reader that passes them on (HTTP/2's trailers).
    var keepsTrailers = false
    private(set) var trailerSection: [UInt8] = []

    /// Takes bytes of `input` until it ends or the body does. Returns how
    /// many it took and whether the body is complete.
    mutating func advance(_ input: UnsafeRawBufferPointer, limits: HTTPParserLimits) throws(HTTPParseError)
        -> (consumed: Int, done: Bool)
    {
        try advance(input, limits: limits, data: { _ in })
    }

    /// As `advance(_:limits:)`, and hands `data` each run of chunk data (its
    /// range in `input`), for a reader that needs the body without its
    /// framing (HTTP/2's DATA frames).
    mutating func advance(_ input: UnsafeRawBufferPointer, limits: HTTPParserLimits, data: (Range<Int>) -> Void) throws(HTTPParseError)
        -> (consumed: Int, done: Bool)
    {
        var i = 0
        while i < input.count {
            if phase == .data {
                let n = min(remaining, input.count - i)
                if n > 0 { data(i ..< i + n) }
                i += n
                remaining -= n
                if remaining == 0 { phase = .dataCarriageReturn }
                continue
            }
            let byte = input[i]
            i += 1
            if keepsTrailers {
                switch phase {
                case .trailerLineStart where byte != 0x0D, .trailerLine, .trailerLineFeed: trailerSection.append(byte)
                case .size, .extensions, .sizeLineFeed, .data, .dataCarriageReturn, .dataLineFeed, .trailerLineStart, .finalLineFeed, .done: break
                }
            }
            switch phase {
            case .size:
                lineBytes += 1
                if let value = Self.hexValue(byte) {
                    digits += 1
                    // 15 hex digits keep the size within Int on every platform we run.
                    guard digits <= 15 else { throw .chunkSizeTooLarge }
                    size = size << 4 | value
                } else {
                    guard digits > 0 else { throw .invalidChunkSize }
                    switch byte {
                    case 0x0D: phase = .sizeLineFeed
                    case UInt8(ascii: ";"): sawSemicolon = true; phase = .extensions
                    case 0x20, 0x09: sawSemicolon = false; phase = .extensions
                    default: throw .invalidChunkSize
                    }
                }
            case .extensions:
                lineBytes += 1
                guard lineBytes <= limits.maxChunkLineBytes else { throw .chunkLineTooLong }
                if byte == 0x0D {
                    guard sawSemicolon else { throw .invalidChunkExtension }
                    phase = .sizeLineFeed
                } else if byte == UInt8(ascii: ";") {
                    sawSemicolon = true
                } else if !sawSemicolon {
                    // Only whitespace (BWS) may come between the size and `;`.
                    guard byte == 0x20 || byte == 0x09 else { throw .invalidChunkExtension }
                } else {
                    guard HTTPSyntax.isFieldValueByte(byte) else { throw .invalidChunkExtension }
                }
            case .sizeLineFeed:
                guard byte == 0x0A else { throw .invalidChunkFraming }
                if size == 0 {
                    phase = .trailerLineStart
                } else {
                    remaining = size
                    phase = .data
                }
            case .data:
                // Handled above, in bulk.
                break
            case .dataCarriageReturn:
                guard byte == 0x0D else { throw .invalidChunkFraming }
                phase = .dataLineFeed
            case .dataLineFeed:
                guard byte == 0x0A else { throw .invalidChunkFraming }
                digits = 0
                size = 0
                lineBytes = 0
                sawSemicolon = false
                phase = .size
            case .trailerLineStart:
                trailerBytes += 1
                if byte == 0x0D {
                    phase = .finalLineFeed
                } else {
                    guard HTTPSyntax.isTokenByte(byte) else { throw .invalidTrailer }
                    trailerSawColon = false
                    phase = .trailerLine
                }
            case .trailerLine:
                trailerBytes += 1
                guard trailerBytes <= limits.maxTrailerBytes else { throw .trailersTooLarge }
                if byte == 0x0D {
                    guard trailerSawColon else { throw .invalidTrailer }
                    phase = .trailerLineFeed
                } else if trailerSawColon {
                    guard HTTPSyntax.isFieldValueByte(byte) else { throw .invalidTrailer }
                } else if byte == UInt8(ascii: ":") {
                    trailerSawColon = true
                } else {
                    guard HTTPSyntax.isTokenByte(byte) else { throw .invalidTrailer }
                }
            case .trailerLineFeed:
                trailerBytes += 1
                guard byte == 0x0A else { throw .invalidChunkFraming }
                phase = .trailerLineStart
            case .finalLineFeed:
                guard byte == 0x0A else { throw .invalidChunkFraming }
                phase = .done
                return (i, true)
            case .done:
                return (i - 1, true)
            }
        }
        return (i, phase == .done)
    }

    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}
