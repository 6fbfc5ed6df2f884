import Testing
import Relay
import Wire

/// Plays the engine for the SOCKS5 server: buffer, receive, drop consumed;
/// answers CONNECT / UDP ASSOCIATE with `outcome`.
struct ServerRun {
    var sent: [[UInt8]] = []
    var request: SOCKS5ServerHandshake.Action?
    var refused: RelayError?
    var rest: [UInt8] = []
}

func driveServer(_ h: inout SOCKS5ServerHandshake, _ input: [UInt8], chunks: [Int] = [],
                 outcome: SOCKS5ServerHandshake.Outcome = .succeeded(bound: ProxyTarget(host: .ipv4(IPv4Address(127, 0, 0, 1)), port: 40000))) throws -> ServerRun {
    var run = ServerRun()
    var buffer: [UInt8] = []
    var offset = 0
    var pieces = chunks
    while offset < input.count {
        let n = pieces.isEmpty ? input.count - offset : min(pieces.removeFirst(), input.count - offset)
        buffer += input[offset ..< offset + n]
        offset += n
        if run.request != nil || run.refused != nil { continue }
        while let action = try buffer.withUnsafeBytes({ try h.receive($0) }) {
            switch action {
            case let .send(bytes, consumed):
                run.sent.append(bytes)
                buffer.removeFirst(consumed)
                continue
            case let .connect(_, consumed), let .associate(_, consumed):
                run.request = action
                buffer.removeFirst(consumed)
                run.sent.append(h.reply(for: outcome))
            case let .refuse(bytes, reason):
                run.sent.append(bytes)
                run.refused = reason
            }
            break
        }
    }
    run.rest = buffer
    return run
}

@Suite struct SOCKS5ServerTests {
    let alice = ProxyCredentials(username: "alice", password: "s3cret")
    let connectDomain: [UInt8] = [0x05, 0x01, 0x00, 0x03, 0x0c] + Array("example.test".utf8) + [0x01, 0xbb]
    let local = ProxyTarget(host: .ipv4(IPv4Address(127, 0, 0, 1)), port: 40000)

    @Test func connectWithoutAuthentication() throws {
        let input: [UInt8] = [0x05, 0x01, 0x00] + connectDomain + Array("GET /".utf8)
        for chunks in splits(input.count) {
            var h = SOCKS5ServerHandshake(credentials: nil)
            let run = try driveServer(&h, input, chunks: chunks)
            #expect(run.sent == [[0x05, 0x00], [0x05, 0x00, 0x00, 0x01, 127, 0, 0, 1, 0x9c, 0x40]])
            #expect(run.request == .connect(ProxyTarget(host: .domain("example.test"), port: 443), consumed: connectDomain.count))
            #expect(run.rest == Array("GET /".utf8), "chunks \(chunks)")
            #expect(h.isOpen)
        }
    }

    @Test func connectWithCredentialsAndIPv6Target() throws {
        let auth: [UInt8] = [0x01, 0x05] + Array("alice".utf8) + [0x06] + Array("s3cret".utf8)
        let request: [UInt8] = [0x05, 0x01, 0x00, 0x04] + Array(repeating: 0, count: 15) + [1, 0x00, 0x50]
        let input: [UInt8] = [0x05, 0x02, 0x00, 0x02] + auth + request
        for chunks in splits(input.count) {
            var h = SOCKS5ServerHandshake(credentials: alice)
            let run = try driveServer(&h, input, chunks: chunks)
            #expect(run.sent.prefix(2) == [[0x05, 0x02], [0x01, 0x00]])
            #expect(run.request == .connect(ProxyTarget(host: .ipv6(.loopback), port: 80), consumed: request.count))
            #expect(run.rest.isEmpty)
        }
    }

    @Test func udpAssociateRepliesWithTheRelayAddress() throws {
        let input: [UInt8] = [0x05, 0x01, 0x00] + [0x05, 0x03, 0x00, 0x01, 0, 0, 0, 0, 0, 0]
        var h = SOCKS5ServerHandshake(credentials: nil)
        let relay = ProxyTarget(host: .ipv6(.loopback), port: 5353)
        let run = try driveServer(&h, input, outcome: .succeeded(bound: relay))
        #expect(run.request == .associate(clientHint: ProxyTarget(host: .ipv4(.any), port: 0), consumed: 10))
        #expect(run.sent.last == [0x05, 0x00, 0x00, 0x04] + Array(repeating: 0, count: 15) + [1, 0x14, 0xe9])
    }

    @Test func wrongPasswordIsRefused() throws {
        for password in ["s3cres", "s3cret!", "", "S3CRET"] {
            let auth: [UInt8] = [0x01, 0x05] + Array("alice".utf8) + [UInt8(password.utf8.count)] + Array(password.utf8)
            var h = SOCKS5ServerHandshake(credentials: alice)
            let run = try driveServer(&h, [0x05, 0x01, 0x02] + auth + connectDomain)
            #expect(run.refused == .authRejected)
            #expect(run.sent == [[0x05, 0x02], [0x01, 0x01]])
            #expect(run.request == nil)
        }
        var h = SOCKS5ServerHandshake(credentials: alice)
        let run = try driveServer(&h, [0x05, 0x01, 0x02, 0x01, 0x03] + Array("bob".utf8) + [0x06] + Array("s3cret".utf8))
        #expect(run.refused == .authRejected)
    }

    /// A client offering only "no authentication" to a server that wants a password.
    @Test func noAcceptableMethod() throws {
        var h = SOCKS5ServerHandshake(credentials: alice)
        let run = try driveServer(&h, [0x05, 0x01, 0x00])
        #expect(run.refused == .noAcceptableMethod)
        #expect(run.sent == [[0x05, 0xff]])
        var open = SOCKS5ServerHandshake(credentials: nil)
        #expect(try driveServer(&open, [0x05, 0x01, 0x02]).sent == [[0x05, 0xff]])
        var none = SOCKS5ServerHandshake(credentials: nil)
        #expect(try driveServer(&none, [0x05, 0x00]).refused == .noAcceptableMethod)
    }

    @Test(arguments: [
        ([UInt8]([0x05, 0x02, 0x00, 0x01, 1, 2, 3, 4, 0, 80]), UInt8(7), RelayError.commandNotSupported), // BIND
        ([0x05, 0x09, 0x00, 0x01, 1, 2, 3, 4, 0, 80], 7, .commandNotSupported),
        ([0x05, 0x01, 0x00, 0x02, 1, 2, 3, 4, 0, 80], 8, .addressTypeNotSupported),
        ([0x05, 0x01, 0x01, 0x01, 1, 2, 3, 4, 0, 80], 1, .protocolViolation(.reserved)),
        ([0x05, 0x01, 0x00, 0x03, 0x03, 0x61, 0x20, 0x62, 0, 80], 1, .protocolViolation(.domainName)),
        ([0x05, 0x01, 0x00, 0x03, 0x00, 0, 80], 1, .protocolViolation(.domainName)),
    ])
    func refusedRequests(request: [UInt8], code: UInt8, reason: RelayError) throws {
        for chunks in splits(3 + request.count) {
            var h = SOCKS5ServerHandshake(credentials: nil)
            let run = try driveServer(&h, [0x05, 0x01, 0x00] + request, chunks: chunks)
            #expect(run.refused == reason)
            #expect(run.sent.last == [0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
        }
    }

    @Test func badVersionsCloseWithoutAnswer() {
        for input: [UInt8] in [[0x04, 0x01, 0x00, 0x50], [0x05, 0x01, 0x00, 0x04, 0x01, 0x00]] {
            var h = SOCKS5ServerHandshake(credentials: nil)
            #expect(throws: RelayError.protocolViolation(.version)) { try driveServer(&h, input) }
        }
        var h = SOCKS5ServerHandshake(credentials: alice)
        #expect(throws: Never.self) {
            let run = try driveServer(&h, [0x05, 0x01, 0x02, 0x05, 0x01, 0x61, 0x01, 0x62])
            #expect(run.refused == .protocolViolation(.authVersion))
        }
    }

    @Test(arguments: [
        (RelayError.connectionRefused, UInt8(5)), (.hostUnreachable, 4), (.networkUnreachable, 3), (.notAllowed, 2),
        (.ttlExpired, 6), (.timedOut(.connect), 4), (.generalFailure, 1), (.protocolViolation(.version), 1),
        (.authRejected, 1), (.httpStatus(504), 4), (.httpStatus(502), 1),
    ])
    func failedOutcomesBecomeReplyCodes(error: RelayError, code: UInt8) throws {
        var h = SOCKS5ServerHandshake(credentials: nil)
        let run = try driveServer(&h, [0x05, 0x01, 0x00] + connectDomain, outcome: .failed(error))
        #expect(run.sent.last == [0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
        #expect(!h.isOpen)
    }

    @Test func truncatedInputNeverDecides() throws {
        let auth: [UInt8] = [0x01, 0x05] + Array("alice".utf8) + [0x06] + Array("s3cret".utf8)
        let input: [UInt8] = [0x05, 0x01, 0x02] + auth + connectDomain
        for cut in 0 ..< input.count {
            var h = SOCKS5ServerHandshake(credentials: alice)
            let run = try driveServer(&h, Array(input.prefix(cut)), chunks: [1])
            #expect(run.request == nil && run.refused == nil)
        }
    }

    @Test func roundTripAgainstTheClient() throws {
        // Our client and our server speak to each other, for each target kind.
        for target in [ProxyTarget(host: .domain("example.test"), port: 443), ProxyTarget(host: .ipv4(IPv4Address(192, 0, 2, 1)), port: 22),
                       ProxyTarget(host: .ipv6(IPv6Address("2001:db8::7")!), port: 8443)] {
            var client = try SOCKS5ClientHandshake(target: target, credentials: alice)
            var server = SOCKS5ServerHandshake(credentials: alice)
            var toServer = client.start()
            var established = false
            for _ in 0 ..< 6 where !established {
                let action = try #require(try toServer.withUnsafeBytes { try server.receive($0) })
                let answer: [UInt8]
                switch action {
                case let .send(bytes, _): answer = bytes
                case let .connect(t, _):
                    #expect(t == target)
                    answer = server.reply(for: .succeeded(bound: local))
                case .associate, .refuse: Issue.record("unexpected \(action)"); return
                }
                switch try #require(try answer.withUnsafeBytes { try client.receive($0) }) {
                case let .send(bytes, _): toServer = bytes
                case let .established(bound, _):
                    #expect(bound == local)
                    established = true
                }
            }
            #expect(established)
        }
    }
}
