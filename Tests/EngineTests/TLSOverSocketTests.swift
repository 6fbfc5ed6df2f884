import Foundation
import Sys
import TLS
import TestSupport
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
        mutating func close() -> [UInt8] { [] }
        mutating func alertRecord(for error: TLSError) -> [UInt8] { [] }
        // Nothing in place: every record goes through `receive`, as a handshake's do.
        mutating func receive(inPlace buffer: UnsafeMutableRawBufferPointer) throws(TLSError) -> InPlaceReceipt { .notInPlace(count: buffer.count) }
        var hasUnframedBytes: Bool { false }
        mutating func takeUnframedBytes() -> [UInt8] { [] }
        var sealing: (prefix: Int, suffix: Int)? { nil }
        mutating func send(inPlace record: UnsafeMutableRawBufferPointer, contentCount: Int) -> Int { 0 }
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

/// `TLSOverSocket` with Sluice's own TLS on both ends: its client on one end
/// of a loopback TCP connection, its server in memory behind the other, the
/// test moving the bytes between them in pieces of every size. Once the
/// handshake is over records are opened where they were read and sealed
/// where they are written from; every byte must come out as it went in,
/// whatever the pieces and the reader's room.
@Suite(.serialized) struct TLSOverSocketRecordTests {
    static func content(_ count: Int, seed: Int) -> [UInt8] {
        (0 ..< count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ seed &+ $0 >> 11) }
    }

    /// A connected pair: `near` for `TLSOverSocket`, `far` for the test.
    func withConnection(_ body: (borrowing Socket, borrowing Socket) throws -> Void) throws {
        let loopback = SysIPAddress("127.0.0.1")!
        let listener = try Socket(.tcp, family: .v4)
        try listener.bind(SocketAddress(loopback, port: 0))
        try listener.listen()
        let port = try #require(listener.localAddress as SocketAddress?).port
        let near = try Socket(.tcp, family: .v4)
        _ = try near.connect(to: SocketAddress(loopback, port: port))
        // Bounded: loopback connects within a few milliseconds.
        for _ in 0 ..< 2000 {
            if let accepted = try listener.accept() {
                try body(near, accepted.socket)
                return
            }
            usleep(1000)
        }
        Issue.record("the loopback connection was never accepted")
    }

    /// Writes all of `bytes` to `socket`, draining nothing else; bounded.
    func writeAll(_ bytes: ArraySlice<UInt8>, to socket: borrowing Socket) throws {
        var offset = bytes.startIndex
        for _ in 0 ..< 10000 where offset < bytes.endIndex {
            let result = try bytes[offset...].withUnsafeBytes { try socket.write($0) }
            if case let .value(n) = result { offset += n } else { usleep(100) }
        }
        #expect(offset == bytes.endIndex, "the socket would not take \(bytes.endIndex - offset) bytes")
    }

    /// Everything `socket` has now.
    func readAvailable(_ socket: borrowing Socket) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        for _ in 0 ..< 1000 {
            let result = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
            guard case let .value(n) = result, n > 0 else { break }
            out += buffer[0 ..< n]
        }
        return out
    }

    /// The handshake through `tls` on `near`, Sluice's server answering on
    /// `far`: the client's records as the engine's upstreams read them.
    func handshake(_ tls: InterceptedUpstream, _ server: inout TLSServer, near: borrowing Socket, far: borrowing Socket) throws {
        tls.records.append(tls.machine.start())
        tls.flush(to: near)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536 + 512, alignment: 16)
        defer { buffer.deallocate(); scratch.deallocate() }
        // Bounded: a handshake is three flights.
        for _ in 0 ..< 2000 where !(tls.isConnected && server.state == .connected) {
            let toServer = try readAvailable(far)
            if !toServer.isEmpty { try writeAll(server.receive(toServer).toPeer[...], to: far) }
            switch tls.read(into: buffer, socket: near, scratch: scratch) {
            case .wouldBlock, .again: break
            case let other: Issue.record("during the handshake: \(other)")
            }
            if toServer.isEmpty { usleep(200) }
        }
        try #require(tls.isConnected && server.state == .connected)
    }

    /// Sluice's client through `TLSOverSocket` on `near`, connected to
    /// Sluice's server (a leaf from a CA made for the test) behind `far`.
    func withTLS(_ body: (InterceptedUpstream, inout TLSServer, borrowing Socket, borrowing Socket) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.path + "/sluice-tls-socket-test-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let interception = Interception(ca: try InterceptionCA.load(directory: directory, create: true))
        interception.skipsVerification = true
        try withConnection { near, far in
            let tls = InterceptedUpstream(interception.client(host: "origin.test"), host: "origin.test")
            var server = interception.server(address: "127.0.0.1")
            try handshake(tls, &server, near: near, far: far)
            try body(tls, &server, near, far)
        }
    }

    /// Reads through `tls` with rooms of every size while the test writes
    /// `stream` to `far` in pieces of every size; the plaintext, and how it ended.
    func readAll(_ tls: InterceptedUpstream, stream: [UInt8], near: borrowing Socket, far: borrowing Socket,
                 random: inout SeededRandom) throws -> (plaintext: [UInt8], ending: String) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 70000, alignment: 16)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536 + 512, alignment: 16)
        defer { buffer.deallocate(); scratch.deallocate() }
        var plaintext: [UInt8] = []
        var written = 0
        // Bounded: each pass writes a piece or reads.
        for _ in 0 ..< 20000 {
            if written < stream.count, Int.random(in: 0 ..< 3, using: &random) > 0 {
                let piece = min(stream.count - written, [1, 5, 700, 16406, 40000, 70000][Int.random(in: 0 ..< 6, using: &random)])
                try writeAll(stream[written ..< written + piece], to: far)
                written += piece
            }
            let room = [1, 100, 4096, 16383, 16384, 65536, 70000][Int.random(in: 0 ..< 7, using: &random)]
            switch tls.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0 ..< room]), socket: near, scratch: scratch) {
            case let .plaintext(n): plaintext += UnsafeRawBufferPointer(rebasing: buffer[0 ..< n])
            case .wouldBlock, .again:
                // Nothing waits that epoll would not report.
                #expect(!tls.hasPlaintextWaiting)
                if written == stream.count { usleep(100) }
            case .closed: return (plaintext, "closed")
            case let .failed(error): return (plaintext, "failed \(error)")
            case let .socketFailed(error): return (plaintext, "socketFailed \(error)")
            }
        }
        return (plaintext, "still reading")
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func everyByteComesOutWhateverThePiecesAndTheReadersRoom(seed: UInt64) throws {
        try withTLS { tls, server, near, far in
            var random = SeededRandom(seed: seed)
            // Records of every size, the last ones small, then close_notify.
            var content: [UInt8] = []
            var stream: [UInt8] = []
            for (index, count) in [100_000, 1, 16384, 16385, 33, 250_000, 7, 2].enumerated() {
                let piece = Self.content(count, seed: index + Int(seed))
                content += piece
                stream += server.send(piece)
            }
            stream += server.close()
            let (plaintext, ending) = try readAll(tls, stream: stream, near: near, far: far, random: &random)
            #expect(plaintext.count == content.count)
            #expect(firstDifference(plaintext, content) == nil)
            #expect(ending == "closed")
        }
    }

    /// A record's start that the handshake's path kept (records read with
    /// the proxy client's hello, `absorb`) goes on in place with the rest.
    @Test func aRecordStartedOnTheGeneralPathEndsInPlace() throws {
        try withTLS { tls, server, near, far in
            let content = Self.content(50000, seed: 9)
            let stream = server.send(content)
            try tls.absorb(Array(stream.prefix(10000)), socket: near)
            #expect(tls.machine.hasUnframedBytes)
            var random = SeededRandom(seed: 77)
            let (plaintext, ending) = try readAll(tls, stream: Array(stream[10000...]) + server.close(), near: near, far: far,
                                                  random: &random)
            #expect(firstDifference(plaintext, content) == nil)
            #expect(ending == "closed")
        }
    }

    /// What a small room left behind is reported waiting without the socket
    /// (epoll says nothing of it), and taken without reading the socket.
    @Test func plaintextLeftBehindIsReportedAndTakenWithoutTheSocket() throws {
        try withTLS { tls, server, near, far in
            let content = Self.content(40000, seed: 10)
            try writeAll(server.send(content)[...], to: far)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
            let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536 + 512, alignment: 16)
            defer { buffer.deallocate(); scratch.deallocate() }
            var plaintext: [UInt8] = []
            // Bounded: loopback delivers within milliseconds.
            for _ in 0 ..< 2000 where plaintext.isEmpty {
                if case let .plaintext(n) = tls.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0 ..< 100]), socket: near, scratch: scratch) {
                    plaintext += UnsafeRawBufferPointer(rebasing: buffer[0 ..< n])
                } else {
                    usleep(500)
                }
            }
            #expect(plaintext.count == 100)
            // The rest of the first record, and whole records behind it, wait.
            for _ in 0 ..< 100 where tls.hasPlaintextWaiting {
                guard case let .plaintext(n) = tls.takeWaiting(into: buffer, socket: near) else {
                    Issue.record("waiting plaintext was not taken")
                    break
                }
                plaintext += UnsafeRawBufferPointer(rebasing: buffer[0 ..< n])
            }
            #expect(!tls.hasPlaintextWaiting)
            // Only whole records were opened; the rest comes with the socket's next read.
            #expect(plaintext.count % 16384 == 0 || plaintext.count == content.count)
            var random = SeededRandom(seed: 5)
            let (rest, _) = try readAll(tls, stream: server.close(), near: near, far: far, random: &random)
            #expect(firstDifference(plaintext + rest, content) == nil)
        }
    }

    /// Once Sluice has sent its close_notify the machine reads what still
    /// comes (RFC 8446 §6.1), records already read first: the origin's own
    /// close_notify, read with the response's last record, ends the read cleanly.
    @Test func afterSluicesCloseNotifyRecordsAlreadyReadGoToTheMachine() throws {
        try withTLS { tls, server, near, far in
            let content = Self.content(3000, seed: 13)
            try writeAll((server.send(content) + server.close())[...], to: far)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: content.count, alignment: 16)
            let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536 + 512, alignment: 16)
            defer { buffer.deallocate(); scratch.deallocate() }
            var got = 0
            // Bounded: loopback delivers within milliseconds.
            for _ in 0 ..< 2000 where got == 0 {
                if case let .plaintext(n) = tls.read(into: buffer, socket: near, scratch: scratch) { got = n } else { usleep(500) }
            }
            #expect(got == content.count)
            #expect(Array(UnsafeRawBufferPointer(buffer)) == content)
            // The close_notify came in the same read and waits, unopened.
            #expect(tls.hasPlaintextWaiting)
            let flushed = tls.close(near)
            #expect(flushed)
            #expect(!tls.isConnected)
            var ending = ""
            switch tls.read(into: buffer, socket: near, scratch: scratch) {
            case .closed: ending = "closed"
            case let other: ending = "\(other)"
            }
            #expect(ending == "closed")
        }
    }

    /// A record for the general path (an alert in the clear) cut across two
    /// reads is read whole and refused; the engine does not sit on its start.
    @Test func aRecordForTheGeneralPathCutAcrossReadsIsReadWhole() throws {
        try withTLS { tls, server, near, far in
            let content = Self.content(100, seed: 14)
            let stream = server.send(content) + [21, 3, 3, 0, 2, 2, 10]
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
            let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536 + 512, alignment: 16)
            defer { buffer.deallocate(); scratch.deallocate() }
            try writeAll(stream.dropLast(3), to: far)
            var arrivals: [String] = []
            // Bounded: loopback delivers within milliseconds.
            for pass in 0 ..< 2000 where arrivals.last.map({ !$0.hasPrefix("failed") }) ?? true {
                if pass == 200 { try writeAll(stream.suffix(3), to: far) }
                switch tls.read(into: buffer, socket: near, scratch: scratch) {
                case let .plaintext(n): arrivals.append("plaintext \(n)")
                case .wouldBlock: usleep(200)
                case let other: arrivals.append("\(other)")
                }
            }
            #expect(arrivals.first == "plaintext 100")
            #expect(arrivals.last?.hasPrefix("failed") == true, "\(arrivals)")
            #expect(arrivals.count == 2, "\(arrivals)")
        }
    }

    /// Records for a peer that reads slowly: sealed where they are written
    /// from, what the socket does not take waits, and arrives whole.
    @Test func recordsSealedInPlaceReachASlowPeerWhole() throws {
        try withTLS { tls, server, near, far in
            // Small, but not below loopback's MSS, where the window stalls on its own.
            near.setBufferSizes(send: 65536)
            far.setBufferSizes(receive: 131_072)
            let upload = Self.content(3_000_000, seed: 11)
            var taken = 0
            var received: [UInt8] = []
            var blocked = 0
            var random = SeededRandom(seed: 12)
            // Bounded: each pass moves what the sockets take.
            for _ in 0 ..< 100_000 where received.count < upload.count {
                if taken < upload.count {
                    let piece = min(upload.count - taken, [1, 1000, 16384, 70000, 200_000][Int.random(in: 0 ..< 5, using: &random)])
                    let sent = upload[taken ..< taken + piece].withUnsafeBytes { tls.write($0, to: near) }
                    taken += sent.taken
                    if sent.blocked { blocked += 1 }
                } else {
                    tls.flush(to: near)
                }
                // The peer reads on every other pass or so: the socket fills.
                guard Int.random(in: 0 ..< 2, using: &random) == 0 || taken == upload.count else { continue }
                let bytes = try readAvailable(far)
                if !bytes.isEmpty { received += try server.receive(bytes).applicationData } else { usleep(50) }
            }
            // The socket pushed back, so records waited.
            #expect(blocked > 0)
            #expect(received.count == upload.count)
            #expect(firstDifference(received, upload) == nil)
        }
    }
}
