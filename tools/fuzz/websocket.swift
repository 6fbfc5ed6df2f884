// fuzz-sources: Sources/Crypto Sources/HTTP
// fuzz-corpus: websocket
// libFuzzer harness for WebSocketMessageReader: the first byte seeds split
// points and the keep limit, the rest is one direction of a WebSocket
// connection. Whatever the bytes: no trap, the messages and the failure do
// not depend on how the bytes were cut, control frames carry at most 125
// bytes, and no message keeps more than the limit.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebSocket(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    let limit = Int(data[0] & 0x3F) * 4

    func run(_ pieces: [Range<Int>]) -> ([WebSocketMessageReader.Message], WebSocketMessageReader.Failure?) {
        var reader = WebSocketMessageReader(keepLimit: limit, compressedKeepLimit: 2 * limit)
        var messages: [WebSocketMessageReader.Message] = []
        for range in pieces {
            do { try reader.read(UnsafeRawBufferPointer(rebasing: bytes[range])) { messages.append($0) } } catch {
                return (messages, error)
            }
        }
        return (messages, nil)
    }

    let (whole, wholeFailure) = run([0 ..< bytes.count])
    var pieces: [Range<Int>] = []
    var state = UInt64(data[0])
    var offset = 0
    while offset < bytes.count {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let n = min(bytes.count - offset, Int(state >> 60))
        pieces.append(offset ..< offset + n)
        offset += n
    }
    let (split, splitFailure) = run(pieces)
    precondition(whole == split, "messages differ with the split: \(whole) != \(split)")
    precondition(wholeFailure == splitFailure, "failure differs with the split")
    for message in whole {
        precondition(message.data.count <= message.length, "kept more than the message: \(message)")
        if message.opcode.isControl {
            precondition(message.length <= 125 && message.data.count == message.length, "a control frame over 125 bytes: \(message)")
        } else {
            precondition(message.data.count <= (message.compressed ? 2 * limit : limit), "kept past the limit: \(message)")
        }
        _ = message.description
    }
    return 0
}
