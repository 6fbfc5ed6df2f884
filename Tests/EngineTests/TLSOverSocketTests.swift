import Sys
import TLS
import Testing
@testable import Engine

/// `TLSOverSocket.read` over a real socket, with a stand-in TLS machine
/// that finishes its handshake on the first bytes it gets and hands them
/// back as application data: a server whose first records share a read
/// with its Finished (an h2 origin's SETTINGS over TLS 1.2). The handshake's
/// end must be told before that plaintext, or the caller never learns it
/// (HTTP mode then wrote HTTP/1.1 to an origin that had chosen h2).
@Suite struct TLSOverSocketTests {
    struct FinishingMachine: TLSMachine {
        var isConnected = false
        mutating func receive(_ bytes: [UInt8]) throws(TLSError) -> TLSOutput {
            var output = TLSOutput()
            output.handshakeCompleted = !isConnected
            isConnected = true
            output.applicationData = bytes
            return output
        }
        mutating func send(_ plaintext: [UInt8]) -> [UInt8] { plaintext }
        mutating func close() -> [UInt8] { [] }
        mutating func alertRecord(for error: TLSError) -> [UInt8] { [] }
    }

    @Test func theHandshakesEndComesBeforeThePlaintextThatCameWithIt() throws {
        let receiver = try Socket(.udp, family: .v4)
        try receiver.bind(SocketAddress(.v4(0x7f00_0001), port: 0))
        guard let address = receiver.localAddress else { Issue.record("no address"); return }
        let sender = try Socket(.udp, family: .v4)
        _ = try [UInt8]([1, 2, 3]).withUnsafeBytes { try sender.send($0, to: address) }
        let tls = TLSOverSocket(FinishingMachine(), host: "origin.test")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate(); scratch.deallocate() }
        var arrivals: [String] = []
        // Bounded; loopback may take a moment to queue the datagram.
        for _ in 0 ..< 200 where arrivals.count < 3 {
            switch tls.read(into: buffer, socket: receiver, scratch: scratch) {
            case let .again(finished): arrivals.append("again(\(finished))")
            case let .plaintext(n): arrivals.append("plaintext \(Array(buffer.prefix(n)))")
            case .wouldBlock: if !arrivals.isEmpty { arrivals.append("wouldBlock") }
            case .closed: arrivals.append("closed")
            case let .failed(error): arrivals.append("failed \(error)")
            case let .socketFailed(error): arrivals.append("socketFailed \(error)")
            }
        }
        #expect(arrivals == ["again(true)", "plaintext [1, 2, 3]", "wouldBlock"])
    }
}
