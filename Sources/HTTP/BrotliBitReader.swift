extension BrotliDecoder {
    /// The input as bits (RFC 7932 §1.5.1), read as DEFLATE's are.
    typealias BitReader = LSBBitReader<Failure>
}

extension BrotliDecoder.Failure: TruncationFailure {
    static var truncated: Self { Self(reason: "brotli: truncated stream") }
}
