// fuzz-sources: Sources/Crypto Sources/HTTP
// fuzz-corpus: quic
// libFuzzer harness for the QUIC ClientHello sniffer. Random bytes almost
// never pass AES-GCM's tag, so most inputs are sealed first: the first byte
// picks the mode and the rest is cut into up to four pieces (each behind a
// 2-byte length). Mode even: each piece becomes the frames of a client
// Initial that opens (QUICInitial.protect), so the frame walk, CRYPTO
// reassembly and the ClientHello reader see what the fuzzer chose. Mode odd:
// the pieces are fed as raw datagrams (header parsing, truncation). Whatever
// the bytes: no trap, the answer does not change when the datagrams are fed
// again, a sealed Initial passes the header check, and a found name is a
// valid lowercase host name.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQUIC(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let mode = data[0]
    var rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    var pieces: [[UInt8]] = []
    while !rest.isEmpty, pieces.count < 4 {
        let length = rest.count >= 2 ? min(Int(rest[0]) << 8 | Int(rest[1]), rest.count - 2) : 0
        let start = min(2, rest.count)
        pieces.append(Array(rest[start ..< start + length]))
        rest.removeFirst(start + length)
    }
    let dcid: [UInt8] = [0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08]
    let datagrams: [[UInt8]] = mode & 1 == 0
        ? pieces.enumerated().map { index, frames in
            QUICInitial.protect(version: mode & 2 == 0 ? .v1 : .v2, destinationConnectionID: dcid,
                                packetNumber: UInt32(index), frames: Array(frames.prefix(8000)))
        }
        : pieces

    var sniffer = QUICClientHelloSniffer(limit: 4096)
    var results: [SniffResult] = []
    for datagram in datagrams { results.append(datagram.withUnsafeBytes { sniffer.feed($0) }) }
    // Sticky: once decided, the same answer for anything fed afterwards.
    if let decided = results.firstIndex(where: { $0 != .needMore }) {
        for later in results[decided...] { precondition(later == results[decided], "answer changed: \(results)") }
    }
    var again = QUICClientHelloSniffer(limit: 4096)
    var replay: [SniffResult] = []
    for datagram in datagrams { replay.append(datagram.withUnsafeBytes { again.feed($0) }) }
    precondition(replay == results, "not deterministic: \(results) vs \(replay)")
    if mode & 1 == 0, let first = datagrams.first {
        precondition(first.withUnsafeBytes { QUICInitial.isClientInitial($0) }, "a sealed Initial failed the header check")
    }
    if case let .serverName(name)? = results.last {
        precondition(!name.isEmpty && name.utf8.count <= 253, "bad name length: \(name)")
        for byte in name.utf8 {
            let ok = (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x2E
                || byte == 0x5F
            precondition(ok, "invalid host name character in \(name)")
        }
    }
    return 0
}
