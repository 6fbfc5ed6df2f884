import Relay

/// Plays the engine for a client handshake: the proxy's bytes arrive in
/// `chunks` (sizes; the rest arrives last), are buffered, handed to `receive`
/// whole, and consumed bytes are dropped, exactly as docs/relay.md describes.
struct ClientRun: Equatable {
    var sent: [[UInt8]] = []
    var bound: ProxyTarget?? = .none
    var rest: [UInt8] = []
    var established: Bool { bound != nil }
}

func drive<H: ProxyClientHandshake>(_ handshake: inout H, _ input: [UInt8], chunks: [Int] = []) throws -> ClientRun {
    var run = ClientRun()
    run.sent.append(handshake.start())
    var buffer: [UInt8] = []
    var offset = 0
    var pieces = chunks
    while offset < input.count {
        let n = pieces.isEmpty ? input.count - offset : min(pieces.removeFirst(), input.count - offset)
        buffer += input[offset ..< offset + n]
        offset += n
        if run.established { continue }
        while true {
            let step = try buffer.withUnsafeBytes { try handshake.receive($0) }
            guard let step else { break }
            switch step {
            case let .send(bytes, consumed):
                run.sent.append(bytes)
                buffer.removeFirst(consumed)
            case let .established(bound, consumed):
                run.bound = .some(bound)
                buffer.removeFirst(consumed)
            }
            if run.established { break }
        }
    }
    run.rest = buffer
    return run
}

/// Every way to cut `count` bytes the tests use: whole, byte by byte, and a few uneven splits.
func splits(_ count: Int) -> [[Int]] {
    [[], Array(repeating: 1, count: count), [2, 3], [count / 2], [1, count]]
}

extension Array where Element == UInt8 {
    init(_ text: String) { self = Array(text.utf8) }
}

/// One `receive` call on exactly these bytes (typed, so a literal is never an [Int]).
func feed<H: ProxyClientHandshake>(_ handshake: inout H, _ bytes: [UInt8]) throws -> HandshakeStep? {
    try bytes.withUnsafeBytes { try handshake.receive($0) }
}
