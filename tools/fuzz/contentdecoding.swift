// fuzz-sources: Sources/Crypto Sources/HTTP
// fuzz-corpus: contentdecoding
// libFuzzer harness for ContentDecoding: the first byte chooses the coding
// (its low two bits: gzip, deflate, br or zstd) and a limit (the next bits:
// 64 n bytes, 0 for a large one). Whatever the bytes: no trap; a success is at most the
// limit; the same input with a larger limit gives the same bytes, and one
// refused only for its size decodes under the larger limit to more than the
// smaller one; only a gzip member decodes as gzip; no bytes decode to none.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzContentDecoding(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let body = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let codings: [ContentDecoding.Coding] = [.gzip, .deflate, .brotli, .zstd]
    let coding = codings[Int(data[0] & 3)]
    let small = Int(data[0] >> 2) * 64
    let large = 1 << 20
    let limit = small == 0 ? large : small
    let limited = Result { () throws(ContentDecoding.Failure) in try ContentDecoding.decode(body, codings: [coding], limit: limit) }
    let whole = Result { () throws(ContentDecoding.Failure) in try ContentDecoding.decode(body, codings: [coding], limit: large) }
    switch (limited, whole) {
    case let (.success(a), .success(b)):
        precondition(a.count <= limit, "decoded \(a.count) past the limit \(limit)")
        precondition(a == b, "the limit changed the bytes")
    case let (.failure(failure), .success(b)):
        precondition(failure.reason == "decoded body larger than \(limit) bytes", "refused under \(limit) for \(failure), decoded under \(large)")
        precondition(b.count > limit, "refused as larger than \(limit), yet it is \(b.count)")
    case let (.success(a), .failure(failure)):
        preconditionFailure("decoded \(a.count) under \(limit), failed under \(large): \(failure)")
    case let (.failure(a), .failure(b)):
        precondition(a == b || a.reason == "decoded body larger than \(limit) bytes", "failures differ: \(a), \(b)")
    }
    if body.isEmpty {
        // An empty body is empty whatever its coding (an empty 200 labelled gzip).
        guard case let .success(nothing) = whole, nothing.isEmpty else { preconditionFailure("no bytes gave \(whole)") }
    } else if coding == .gzip, case .success = whole {
        // Only gzip data decodes as gzip: a member at the start, header and trailer at least.
        precondition(body.count >= 18 && body[0] == 0x1F && body[1] == 0x8B, "decoded what is no gzip member")
    }
    return 0
}
