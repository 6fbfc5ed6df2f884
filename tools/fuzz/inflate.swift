// fuzz-sources: Sources/Crypto Sources/HTTP
// fuzz-corpus: inflate
// libFuzzer harness for Inflater: the first byte chooses the window (its low
// three bits: 8 + n), the limit (the next four: 16 n bytes) and how the rest is
// cut into messages (the top bit: after each 00 00 FF FF, as RFC 7692's
// receiver restores it, or at points it seeds). The messages go through one
// inflater with that limit and one without. Whatever the bytes: no trap, no
// call appends past the limit or more than it decompressed, the limit changes
// neither the lengths nor the failure (the window is fed past it) and what it
// keeps is the start of the whole, and a failure sticks.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInflate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    let windowBits = 8 + Int(data[0] & 0x07)
    let limit = Int((data[0] >> 3) & 0x0F) * 16

    var messages: [Range<Int>] = []
    var start = 0
    if data[0] & 0x80 == 0 {
        var index = 0
        while index + 4 <= bytes.count {
            if bytes[index] == 0x00, bytes[index + 1] == 0x00, bytes[index + 2] == 0xFF, bytes[index + 3] == 0xFF {
                messages.append(start ..< index + 4)
                start = index + 4
                index = start
            } else {
                index += 1
            }
        }
    } else {
        var state = UInt64(data[0])
        while start < bytes.count {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let n = min(bytes.count - start, Int(state >> 56))
            messages.append(start ..< start + n)
            start += n
        }
    }
    if start < bytes.count { messages.append(start ..< bytes.count) }

    var limited = Inflater(windowBits: windowBits)
    var whole = Inflater(windowBits: windowBits)
    for range in messages {
        let message = UnsafeRawBufferPointer(rebasing: bytes[range])
        var kept: [UInt8] = [0xAA]
        var all: [UInt8] = []
        let limitedResult = Result { () throws(Inflater.Failure) in try limited.inflate(message, limit: limit, into: &kept) }
        let wholeResult = Result { () throws(Inflater.Failure) in try whole.inflate(message, limit: .max, into: &all) }
        precondition(kept.first == 0xAA, "output's earlier bytes changed")
        let appended = kept.count - 1
        precondition(appended <= limit, "appended \(appended) past the limit \(limit)")
        precondition(Array(kept.dropFirst()) == Array(all.prefix(appended)), "the limited output is not the start of the whole")
        switch (limitedResult, wholeResult) {
        case (.success(let limitedTotal), .success(let wholeTotal)):
            precondition(limitedTotal == wholeTotal && wholeTotal == all.count, "totals differ: \(limitedTotal), \(wholeTotal), \(all.count)")
            precondition(appended == min(limit, wholeTotal), "appended \(appended) of \(wholeTotal) with limit \(limit)")
        case (.failure(let limitedFailure), .failure(let wholeFailure)):
            precondition(limitedFailure == wholeFailure, "failures differ: \(limitedFailure), \(wholeFailure)")
            precondition(limited.failure == limitedFailure, "the failure was not kept")
            _ = limitedFailure.description
            // A failure sticks: the next call throws it, whatever its input.
            var after: [UInt8] = []
            let again = Result { () throws(Inflater.Failure) in try limited.inflate(UnsafeRawBufferPointer(start: nil, count: 0), limit: limit, into: &after) }
            guard case .failure(let repeated) = again, repeated == limitedFailure, after.isEmpty else {
                preconditionFailure("the failure did not stick")
            }
            return 0
        case (.success, .failure), (.failure, .success):
            preconditionFailure("the limit changed the outcome: \(limitedResult), \(wholeResult)")
        }
    }
    return 0
}
