import Testing
@testable import HTTP

/// RFC 6455 §5.2: one frame, masked when `mask` is given (a client's).
func webSocketFrame(_ opcode: UInt8, _ payload: [UInt8], final: Bool = true, rsv1: Bool = false, mask: [UInt8]? = nil) -> [UInt8] {
    var bytes: [UInt8] = [(final ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode]
    let maskBit: UInt8 = mask == nil ? 0 : 0x80
    if payload.count < 126 {
        bytes.append(maskBit | UInt8(payload.count))
    } else if payload.count <= 0xFFFF {
        bytes += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    } else {
        bytes.append(maskBit | 127)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((payload.count >> shift) & 0xFF)) }
    }
    guard let mask else { return bytes + payload }
    return bytes + mask + payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
}

private typealias WSReader = WebSocketMessageReader
private typealias WSMessage = WebSocketMessageReader.Message

/// Reads `bytes`, adding what they complete to `got`.
private func feed(_ reader: inout WSReader, _ bytes: ArraySlice<UInt8>, into got: inout [WSMessage]) throws(WSReader.Failure) {
    var collected: [WSMessage] = []
    let result = bytes.withUnsafeBytes { raw in Result { () throws(WSReader.Failure) in try reader.read(raw) { collected.append($0) } } }
    got += collected
    try result.get()
}

@Suite struct WebSocketMessageReaderTests {
    /// Reads `bytes` whole, byte by byte, and in pieces of 7: the messages must not depend on the cuts.
    private func messages(_ bytes: [UInt8], keepLimit: Int = 1 << 20) throws -> [WSMessage] {
        var results: [[WSMessage]] = []
        for piece in [bytes.count, 1, 7] {
            var reader = WSReader(keepLimit: keepLimit)
            var got: [WSMessage] = []
            var start = 0
            repeat {
                let end = min(bytes.count, start + max(piece, 1))
                try feed(&reader, bytes[start ..< end], into: &got)
                start = end
            } while start < bytes.count
            results.append(got)
        }
        #expect(results[0] == results[1] && results[0] == results[2])
        return results[0]
    }

    func text(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func aServersTextAndBinaryMessages() throws {
        let bytes = webSocketFrame(0x1, text("echo: hello")) + webSocketFrame(0x2, [0, 1, 2, 0xFF])
        #expect(try messages(bytes) == [
            WSMessage(opcode: .text, data: text("echo: hello"), length: 11, compressed: false),
            WSMessage(opcode: .binary, data: [0, 1, 2, 0xFF], length: 4, compressed: false),
        ])
    }

    @Test func aClientsMaskedFramesAreUnmasked() throws {
        let bytes = webSocketFrame(0x1, text("hello"), mask: [0x37, 0xFA, 0x21, 0x3D])
        #expect(bytes[2 ..< 6] == [0x37, 0xFA, 0x21, 0x3D][...])
        #expect(try messages(bytes) == [WSMessage(opcode: .text, data: text("hello"), length: 5, compressed: false)])
    }

    /// §5.4: fragments join into one message; control frames may come between them.
    @Test func fragmentsJoinAroundAPing() throws {
        let mask: [UInt8] = [1, 2, 3, 4]
        let bytes = webSocketFrame(0x1, text("fragm"), final: false, mask: mask)
            + webSocketFrame(0x9, text("p1"), mask: mask)
            + webSocketFrame(0x0, text("ented mes"), final: false, mask: mask)
            + webSocketFrame(0x0, text("sage"), mask: mask)
        #expect(try messages(bytes) == [
            WSMessage(opcode: .ping, data: text("p1"), length: 2, compressed: false),
            WSMessage(opcode: .text, data: text("fragmented message"), length: 18, compressed: false),
        ])
    }

    /// The 16-bit and 64-bit length forms, an empty frame, and a close with its status.
    @Test func eachLengthForm() throws {
        let medium = (0 ..< 300).map { UInt8($0 & 0xFF) }
        let large = [UInt8](repeating: 0x78, count: 70_000)
        let bytes = webSocketFrame(0x2, medium, mask: [9, 8, 7, 6]) + webSocketFrame(0x1, large)
            + webSocketFrame(0x1, []) + webSocketFrame(0x8, [0x03, 0xE8] + text("bye"))
        #expect(try messages(bytes) == [
            WSMessage(opcode: .binary, data: medium, length: 300, compressed: false),
            WSMessage(opcode: .text, data: large, length: 70_000, compressed: false),
            WSMessage(opcode: .text, data: [], length: 0, compressed: false),
            WSMessage(opcode: .close, data: [0x03, 0xE8] + text("bye"), length: 5, compressed: false),
        ])
    }

    /// A message past the limit keeps its first bytes and counts the rest;
    /// a compressed one (RSV1) says so.
    @Test func longMessagesAreCutAndCompressionIsNoted() throws {
        let bytes = webSocketFrame(0x1, [UInt8](repeating: 0x61, count: 1000), final: false, rsv1: true, mask: [5, 6, 7, 8])
            + webSocketFrame(0x0, [UInt8](repeating: 0x62, count: 1000), mask: [5, 6, 7, 8])
        #expect(try messages(bytes, keepLimit: 1500) == [
            WSMessage(opcode: .text, data: [UInt8](repeating: 0x61, count: 1000) + [UInt8](repeating: 0x62, count: 500), length: 2000, compressed: true),
        ])
    }

    /// A compressed message is kept up to its own limit: it must be whole to be inflated.
    @Test func compressedMessagesHaveTheirOwnLimit() throws {
        let bytes = webSocketFrame(0x1, [UInt8](repeating: 0x61, count: 3000), rsv1: true) + webSocketFrame(0x1, [UInt8](repeating: 0x62, count: 3000))
        var reader = WSReader(keepLimit: 100, compressedKeepLimit: 5000)
        var got: [WSMessage] = []
        try feed(&reader, bytes[...], into: &got)
        #expect(got.map(\.data.count) == [3000, 100] && got.map(\.length) == [3000, 3000])
    }

    @Test(arguments: [
        (webSocketFrame(0x3, []), "reserved opcode 3"),
        (webSocketFrame(0x9, [UInt8](repeating: 0, count: 126)), "a ping frame that is fragmented or over 125 bytes"),
        (webSocketFrame(0x8, [], final: false), "a close frame that is fragmented or over 125 bytes"),
        (webSocketFrame(0x0, Array("x".utf8)), "a continuation frame with no message to continue"),
        (webSocketFrame(0x1, Array("a".utf8), final: false) + webSocketFrame(0x2, Array("b".utf8)), "a new binary message inside a fragmented one"),
        ([0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1], "a 64-bit length with its top bit set"),
    ])
    func framesRFC6455ForbidsStopTheRecord(bytes: [UInt8], reason: String) throws {
        var reader = WSReader(keepLimit: 100)
        var got: [WSMessage] = []
        #expect(throws: WSReader.Failure(reason: reason)) {
            try feed(&reader, bytes[...], into: &got)
        }
        // Failed for good: what follows is not read.
        #expect(throws: WSReader.Failure(reason: reason)) {
            try feed(&reader, webSocketFrame(0x1, text("later"))[...], into: &got)
        }
        #expect(got.allSatisfy { $0.opcode != .text || $0.data != text("later") })
    }
}
