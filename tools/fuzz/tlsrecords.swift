// fuzz-sources: Sources/Crypto Sources/TLS
// fuzz-corpus: tlsrecords
// libFuzzer harness for records opened where they lie (`receive(inPlace:)`,
// the engine's path once a handshake is over) against the general path
// (`receive`), which the `tls` harness fuzzes. A client and a server of
// Sluice's own shake hands in memory; the input then says what the server
// sends (records of any length, a KeyUpdate the client asked for, close_notify,
// stray headers) and which of the stream's bytes to flip. Whatever the bytes:
// no trap, and the in-place path, fed the stream in the pieces the input cuts
// it into (carrying a record's start over as the engine does), opens the same
// application data and ends with the same alert, or none, as `receive` fed
// the stream at once (both keep no data from a stream that ends in an alert).

import Glibc

private let leafKey = P256.PrivateKey(rawScalar: [UInt8](repeating: 0x11, count: 32))!

private func counting() -> (Int) -> [UInt8] {
    var counter: UInt8 = 0
    return { count in (0 ..< count).map { _ in counter &+= 1; return counter } }
}

/// A connected pair, the suite chosen by the input's first byte.
private func connected(_ suite: CipherSuite) -> (TLSClient, TLSServer)? {
    var configuration = TLSClient.Configuration(
        serverName: "fuzz.sluice.test", applicationProtocols: [Array("http/1.1".utf8)], randomBytes: counting(),
        verifyChain: { (_: [[UInt8]]) throws(TLSError) -> ServerPublicKey in .p256(leafKey.publicKey) })
    configuration.cipherSuites = [suite]
    var client = TLSClient(configuration: configuration)
    var server = TLSServer(configuration: TLSServer.Configuration(
        certificate: { _ in ([[0x30, 0x03, 0x02, 0x01, 0x01]], leafKey) },
        applicationProtocols: [Array("http/1.1".utf8)], randomBytes: counting()))
    var toServer = client.start()
    // Bounded: a handshake is three flights.
    for _ in 0 ..< 4 where !toServer.isEmpty {
        guard let atServer = try? server.receive(toServer), let atClient = try? client.receive(atServer.toPeer) else { return nil }
        toServer = atClient.toPeer
    }
    return client.state == .connected && server.state == .connected ? (client, server) : nil
}

/// What the general path makes of the stream: its data, and how it ended.
private func general(_ stream: [UInt8], _ client: TLSClient) -> (data: [UInt8], end: String) {
    var client = client
    do {
        let output = try client.receive(stream)
        return (output.applicationData, output.peerClosed ? "closed" : "open")
    } catch {
        return ([], "alert \(error.alert)")
    }
}

/// The engine's way: pieces appended to a buffer, whole records opened in
/// place, a record's start carried over; what is not for the in-place path
/// goes to `receive`, and a start `receive` kept comes back.
private func inPlace(_ stream: [UInt8], cuts: [Int], _ client: TLSClient) -> (data: [UInt8], end: String) {
    var client = client
    var buffer: [UInt8] = []
    var data: [UInt8] = []
    var closed = false
    var start = 0
    var pieces = cuts.filter { $0 > 0 && $0 < stream.count }.sorted() + [stream.count]
    var from = 0
    // Bounded by the pieces and the records in them.
    for _ in 0 ..< 10_000 {
        if client.hasUnframedBytes {
            buffer = client.takeUnframedBytes() + buffer[start...]
            start = 0
        }
        let result = buffer.withUnsafeMutableBytes { whole in
            Result { () throws(TLSError) in try client.receive(inPlace: UnsafeMutableRawBufferPointer(rebasing: whole[start...])) }
        }
        let receipt: InPlaceReceipt
        switch result {
        case let .success(value): receipt = value
        case let .failure(error): return ([], "alert \(error.alert)")
        }
        switch receipt {
        case let .applicationData(consumed, content):
            data += buffer[start + content.lowerBound ..< start + content.upperBound]
            start += consumed
        case let .output(consumed, output):
            start += consumed
            data += output.applicationData
            if output.peerClosed { closed = true }
        case let .notInPlace(count):
            do {
                let output = try client.receive(Array(buffer[start ..< start + count]))
                data += output.applicationData
                if output.peerClosed { closed = true }
            } catch {
                return ([], "alert \(error.alert)")
            }
            start += count
        case .needMore:
            guard !pieces.isEmpty else { return (data, closed ? "closed" : "open") }
            let to = pieces.removeFirst()
            buffer = Array(buffer[start...]) + stream[from ..< to]
            start = 0
            from = to
        }
    }
    return (data, "looping")
}

/// Made once, before the first input, and let go at exit: LeakSanitizer's
/// last look cannot follow pointers that Swift keeps in an enum's spare
/// bits, so anything held until then would read as a leak.
nonisolated(unsafe) private var pairs: [CipherSuite: (TLSClient, TLSServer)] = [:]

/// The handshakes happen here, before the first input: made inside one, their
/// allocations (kept for the run) would count as that input's leak.
@_cdecl("LLVMFuzzerInitialize")
public func initializeTLSRecords(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    for suite in [CipherSuite.chacha20Poly1305SHA256, .aes128GCMSHA256] { pairs[suite] = connected(suite) }
    precondition(pairs.count == 2, "the handshakes in memory failed")
    atexit { pairs = [:] }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTLSRecords(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard input.count >= 2, let pair = pairs[input[0] & 1 == 0 ? .chacha20Poly1305SHA256 : .aes128GCMSHA256] else { return 0 }
    var (client, server) = pair
    var stream: [UInt8] = []
    var cuts: [Int] = []
    var flips: [(Int, UInt8)] = []
    var i = 1
    // Each instruction is two bytes: what, and how much.
    while i + 1 < input.count {
        let (what, much) = (input[i], Int(input[i + 1]))
        i += 2
        switch what % 8 {
        case 0, 1: stream += server.send([UInt8](repeating: what, count: much * 97 + 1))
        case 2: stream += server.send([UInt8](repeating: what, count: 16384 - much))
        case 3:
            // A KeyUpdate the client asks for: the server's answer, then its next keys.
            let request = client.records.write(HandshakeMessage.encode(type: .keyUpdate, body: [1]), type: .handshake)
            guard let answer = try? server.receive(request) else { return 0 }
            stream += answer.toPeer
        case 4: cuts.append(stream.count * much / 256)
        case 5: flips.append((stream.count * much / 256, what | 1))
        case 6: stream += [UInt8(much % 26), 3, UInt8(much % 5), 0, UInt8(much % 3)] + [UInt8](repeating: 1, count: much % 3)
        default: stream += server.close()
        }
        if stream.count > 200_000 { break }
    }
    for (offset, mask) in flips where offset < stream.count { stream[offset] ^= mask }
    let expected = general(stream, client)
    let got = inPlace(stream, cuts: cuts, client)
    precondition(got.end == expected.end && got.data == expected.data,
                 "in place: \(got.data.count) bytes, \(got.end); general: \(expected.data.count) bytes, \(expected.end)")
    return 0
}
