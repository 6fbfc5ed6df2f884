import Crypto
import Stack
import Testing
import HTTP
@testable import Engine

/// The record of a WebSocket whose 101 accepted permessage-deflate: what
/// inflates is recorded as the app read it; from a message that does not,
/// that direction is recorded as it went, cut to the body limit like any
/// message, with the reason in the comment.
@Suite struct WebSocketRecordingTests {
    func exchange(extensions: String) throws -> HTTPExchange {
        var exchange = HTTPExchange(method: "GET", url: "https://chat.test/socket", rule: "", policy: "", rewrittenFrom: nil, mocked: false,
                                    started: Instant(nanoseconds: 0))
        exchange.status = 101
        var requests = HTTPRequestParser()
        let request = Array("GET /socket HTTP/1.1\r\nHost: chat.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n".utf8)
        guard case let .head(head, _)? = try request.withUnsafeBytes({ try requests.parse($0) }) else { throw Failure() }
        exchange.requestHead = head
        var responses = HTTPResponseParser()
        responses.expectResponse(to: .get)
        let response = Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\(extensions)\r\n".utf8)
        guard case let .head(responseHead, _)? = try response.withUnsafeBytes({ try responses.parse($0) }) else { throw Failure() }
        exchange.responseHead = responseHead
        return exchange
    }

    struct Failure: Error {}

    /// One unmasked server frame (RFC 6455 §5.2), RSV1 set: compressed.
    func compressedFrame(_ payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [0xC1]
        if payload.count < 126 { bytes.append(UInt8(payload.count)) } else { bytes += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] }
        return bytes + payload
    }

    @Test func inflatedUntilADirectionCannotBe() throws {
        let recording = WebSocketRecording(exchange: try exchange(extensions: "Sec-WebSocket-Extensions: permessage-deflate\r\n"), keepLimit: 100)
        #expect(WebSocketRecording.isWebSocket(recording.exchange))
        // RFC 7692 §7.2.3.1: "Hello" compressed; then bytes that are no DEFLATE (a reserved block type).
        let hello: [UInt8] = [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]
        let bytes = compressedFrame(hello) + compressedFrame([UInt8](repeating: 0xFF, count: 3000))
        bytes.withUnsafeBytes { recording.read($0, fromApp: false, time: 1.5) }
        let messages = recording.messages
        #expect(messages.count == 2)
        #expect(messages.first == HARWebSocketMessage(type: "receive", time: 1.5, opcode: 1, data: "Hello"))
        let second = try #require(messages.last)
        #expect(second.compressed && second.length == 3000 && second.data == Base64.encode([UInt8](repeating: 0xFF, count: 100)), "\(second)")
        #expect(recording.notes == ["the server's messages are recorded compressed from one on: DEFLATE: reserved block type 3"], "\(recording.notes)")
        var entry = HAREntry(startedDateTime: "2026-12-05T00:00:00Z", request: HARRequest(recording.exchange.requestHead!, url: recording.exchange.url, body: [], bodySize: 0),
                             response: HARResponse(status: 101, statusText: "Switching Protocols", content: HARContent(size: 0, mimeType: ""),
                                                   redirectURL: "", headersSize: -1, bodySize: 0))
        recording.decorate(&entry)
        #expect(entry.request.url == "wss://chat.test/socket" && entry.resourceType == "websocket" && entry.webSocketMessages == messages)
    }

    /// Without permessage-deflate accepted, nothing is inflated.
    @Test func withoutTheExtensionNothingIsInflated() throws {
        let recording = WebSocketRecording(exchange: try exchange(extensions: ""), keepLimit: 100)
        let hello: [UInt8] = [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]
        compressedFrame(hello).withUnsafeBytes { recording.read($0, fromApp: false, time: 1) }
        #expect(recording.messages.map(\.compressed) == [true])
        #expect(recording.notes.isEmpty)
    }
}
