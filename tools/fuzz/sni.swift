// fuzz-sources: Sources/Crypto Sources/HTTP
// fuzz-corpus: sni
// libFuzzer harness for the ClientHello sniffer: the first byte seeds split
// points, the rest is what an app sent. Whatever the bytes: no trap, the
// result does not depend on how the bytes were cut, a found name is a valid
// lowercase host name, and ProtocolGuess never contradicts a found hello.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSNI(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    var whole = TLSClientHelloSniffer(limit: 4096)
    let expected = whole.feed(bytes)

    var split = TLSClientHelloSniffer(limit: 4096)
    var state = UInt64(data[0])
    var offset = 0
    var result = SniffResult.needMore
    while offset < bytes.count {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let n = min(bytes.count - offset, 1 + Int(state >> 59))
        result = split.feed(UnsafeRawBufferPointer(rebasing: bytes[offset ..< offset + n]))
        offset += n
    }
    if bytes.isEmpty { result = split.feed(bytes) }
    precondition(result == expected, "split result \(result) != whole \(expected)")
    precondition(split.applicationProtocols == whole.applicationProtocols, "ALPN differs with the split")

    if case let .serverName(name) = expected {
        precondition(!name.isEmpty && name.utf8.count <= 253, "bad name length: \(name)")
        for byte in name.utf8 {
            let ok = (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x2E
                || byte == 0x5F
            precondition(ok, "invalid host name character in \(name)")
        }
        precondition(ProtocolGuess.guess(bytes) == .tls, "a ClientHello guessed as something else")
    }
    _ = expected.description
    return 0
}
