// fuzz-sources: Sources/Wire Sources/Crypto Sources/HTTP Sources/Relay
// fuzz-corpus: relay
// libFuzzer harness for the proxy handshakes. The first byte picks a machine,
// the second its options, the third seeds how the rest is split into reads.
// Whatever the bytes: no trap, consumed counts stay within what was read, and
// the result (messages sent, outcome, leftover stream bytes) is the same
// whether the input arrives whole or in random pieces.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRelay(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 3 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let mode = bytes[0] % 6, options = bytes[1], seed = UInt64(bytes[2])
    let input = Array(bytes[3...])
    let credentials = options & 1 == 0 ? nil : ProxyCredentials(username: "alice", password: "s3cret")
    let target = ProxyTarget(host: .domain("example.test"), port: 443)
    switch mode {
    case 0, 1:
        let make = { () -> SOCKS5ClientHandshake in
            try! SOCKS5ClientHandshake(target: target, credentials: credentials,
                                       command: options & 2 == 0 ? .connect : .udpAssociate)
        }
        let whole = runClient(make(), input, chunks: [])
        let split = runClient(make(), input, chunks: pieces(input.count, seed: seed))
        precondition(whole == split, "SOCKS5 client: whole \(whole) vs split \(split)")
    case 2:
        let make = { () -> HTTPConnectHandshake in try! HTTPConnectHandshake(target: target, credentials: credentials) }
        let whole = runClient(make(), input, chunks: [])
        let split = runClient(make(), input, chunks: pieces(input.count, seed: seed))
        precondition(whole == split, "HTTP CONNECT client: whole \(whole) vs split \(split)")
    case 3:
        let outcome: SOCKS5ServerHandshake.Outcome = options & 2 == 0
            ? .succeeded(bound: ProxyTarget(host: .ipv4(IPv4Address(127, 0, 0, 1)), port: 1080)) : .failed(.connectionRefused)
        let whole = runSOCKS5Server(credentials, outcome, input, chunks: [])
        let split = runSOCKS5Server(credentials, outcome, input, chunks: pieces(input.count, seed: seed))
        precondition(whole == split, "SOCKS5 server: whole \(whole) vs split \(split)")
    case 4:
        let whole = runHTTPServer(credentials, input, chunks: [])
        let split = runHTTPServer(credentials, input, chunks: pieces(input.count, seed: seed))
        precondition(whole == split, "HTTP proxy server: whole \(whole) vs split \(split)")
    default:
        datagramAndTextParsers(input)
    }
    return 0
}

/// What a run produced, compared across splits.
struct Outcome: Equatable, CustomStringConvertible {
    var sent: [[UInt8]] = []
    var result = ""
    var rest: [UInt8] = []
    var description: String { "sent \(sent.map(\.count)) → \(result), rest \(rest.count)" }
}

/// Deterministic piece sizes from a seed (SplitMix64), covering the input.
func pieces(_ count: Int, seed: UInt64) -> [Int] {
    var state = seed &+ 0x9E37_79B9_7F4A_7C15
    var out: [Int] = []
    var total = 0
    while total < count {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        let n = Int(z % 8) + 1
        out.append(n)
        total += n
    }
    return out
}

/// Feeds `input` as the engine would (buffer, receive the whole unconsumed
/// part, drop what was consumed) in the given pieces.
func feedPieces(_ input: [UInt8], _ chunks: [Int], _ body: (inout [UInt8]) -> Void) {
    var buffer: [UInt8] = []
    var offset = 0
    var rest = chunks
    while offset < input.count {
        let n = rest.isEmpty ? input.count - offset : min(rest.removeFirst(), input.count - offset)
        buffer += input[offset ..< offset + n]
        offset += n
        body(&buffer)
    }
}

func runClient<H: ProxyClientHandshake>(_ machine: H, _ input: [UInt8], chunks: [Int]) -> Outcome {
    var h = machine
    var out = Outcome()
    out.sent.append(h.start())
    var done = false, established = false
    var leftover: [UInt8] = []
    feedPieces(input, chunks) { buffer in
        if established { leftover = buffer }
        if done { return }
        for _ in 0 ..< 8 {
            let step: HandshakeStep?
            do {
                step = try buffer.withUnsafeBytes { try h.receive($0) }
            } catch {
                out.result = "error \(error)"
                _ = (error as? RelayError)?.appFacing
                done = true
                return
            }
            guard let step else { return }
            switch step {
            case let .send(bytes, consumed):
                precondition(consumed > 0 && consumed <= buffer.count)
                out.sent.append(bytes)
                buffer.removeFirst(consumed)
            case let .established(bound, consumed):
                precondition(consumed > 0 && consumed <= buffer.count)
                out.result = "established \(String(describing: bound))"
                buffer.removeFirst(consumed)
                done = true
                established = true
                leftover = buffer
                return
            }
        }
        preconditionFailure("a handshake took more than 8 steps")
    }
    if !done { out.result = "waiting, then \(h.inputClosed())" }
    out.rest = leftover
    return out
}

func runSOCKS5Server(_ credentials: ProxyCredentials?, _ outcome: SOCKS5ServerHandshake.Outcome, _ input: [UInt8], chunks: [Int]) -> Outcome {
    var h = SOCKS5ServerHandshake(credentials: credentials)
    var out = Outcome()
    var done = false
    var open = false
    feedPieces(input, chunks) { buffer in
        if open { out.rest = buffer }
        if done { return }
        for _ in 0 ..< 8 {
            let action: SOCKS5ServerHandshake.Action?
            do {
                action = try buffer.withUnsafeBytes { try h.receive($0) }
            } catch {
                out.result = "closed: \(error)"
                done = true
                return
            }
            guard let action else { return }
            switch action {
            case let .send(bytes, consumed):
                precondition(consumed > 0 && consumed <= buffer.count)
                out.sent.append(bytes)
                buffer.removeFirst(consumed)
            case let .connect(_, consumed), let .associate(_, consumed):
                precondition(consumed > 0 && consumed <= buffer.count)
                out.result = action.description
                buffer.removeFirst(consumed)
                out.sent.append(h.reply(for: outcome))
                out.rest = buffer
                open = true
                done = true
                return
            case let .refuse(bytes, reason):
                out.sent.append(bytes)
                out.result = "refused: \(reason)"
                done = true
                return
            }
        }
        preconditionFailure("a SOCKS5 server handshake took more than 8 steps")
    }
    return out
}

func runHTTPServer(_ credentials: ProxyCredentials?, _ input: [UInt8], chunks: [Int]) -> Outcome {
    var h = HTTPProxyServerHandshake(credentials: credentials)
    var out = Outcome()
    var done = false
    feedPieces(input, chunks) { buffer in
        if done { return }
        guard let action = buffer.withUnsafeBytes({ h.receive($0) }) else { return }
        out.result = action.description
        switch action {
        case let .connect(_, consumed):
            precondition(consumed > 0 && consumed <= buffer.count)
            out.sent.append(h.reply(for: .succeeded))
        case let .forward(_, head, consumed):
            precondition(consumed > 0 && consumed <= buffer.count)
            out.sent.append(head)
            out.sent.append(h.reply(for: .failed(.hostUnreachable)))
        case let .refuse(bytes, _):
            out.sent.append(bytes)
        }
        done = true
        return
    }
    return out
}

/// UDP headers round-trip; authorities print and parse back to themselves.
func datagramAndTextParsers(_ input: [UInt8]) {
    input.withUnsafeBytes { raw in
        guard let (header, offset) = try? SOCKS5UDPHeader.parse(raw) else { return }
        precondition(offset <= raw.count)
        _ = header.description
        var out = [UInt8](repeating: 0xAA, count: 300)
        let n = try! out.withUnsafeMutableBytes { try header.emit(into: $0) }
        precondition(n == offset, "UDP header re-emits to \(n) bytes, parsed \(offset)")
        let again = try! out.withUnsafeBytes { try SOCKS5UDPHeader.parse($0.sub(0, n)) }
        precondition(again.header == header)
    }
    let text = String(decoding: input, as: UTF8.self)
    if let target = ProxyTarget(authority: text) {
        precondition(ProxyTarget(authority: target.description) == target, "\(target) does not parse back")
    }
}
