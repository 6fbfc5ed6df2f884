import Testing
import Relay
import Wire

@Suite struct SOCKS5ClientTests {
    let example = ProxyTarget(host: .domain("example.test"), port: 443)
    let alice = ProxyCredentials(username: "alice", password: "s3cret")

    // Hand-computed RFC 1928 §4 requests.
    @Test func connectRequestForIPv4() throws {
        var h = try SOCKS5ClientHandshake(target: ProxyTarget(host: .ipv4(IPv4Address(192, 0, 2, 10)), port: 443), credentials: nil)
        #expect(h.start() == [0x05, 0x01, 0x00])
        let step = try feed(&h, [0x05, 0x00])
        #expect(step == .send([0x05, 0x01, 0x00, 0x01, 0xc0, 0x00, 0x02, 0x0a, 0x01, 0xbb], consumed: 2))
    }

    @Test func connectRequestForIPv6() throws {
        var h = try SOCKS5ClientHandshake(target: ProxyTarget(host: .ipv6(IPv6Address("2001:db8::1")!), port: 8080), credentials: nil)
        _ = h.start()
        let step = try feed(&h, [0x05, 0x00])
        let expected: [UInt8] = [0x05, 0x01, 0x00, 0x04, 0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [0x01, 0x1f, 0x90]
        #expect(step == .send(expected, consumed: 2))
    }

    @Test func connectRequestForDomain() throws {
        var h = try SOCKS5ClientHandshake(target: example, credentials: nil)
        _ = h.start()
        let step = try feed(&h, [0x05, 0x00])
        #expect(step == .send([0x05, 0x01, 0x00, 0x03, 0x0c] + [UInt8]("example.test") + [0x01, 0xbb], consumed: 2))
    }

    @Test func udpAssociateRequest() throws {
        var h = try SOCKS5ClientHandshake(target: ProxyTarget(host: .ipv4(.any), port: 0), credentials: nil, command: .udpAssociate)
        _ = h.start()
        let step = try feed(&h, [0x05, 0x00])
        #expect(step == .send([0x05, 0x03, 0x00, 0x01, 0, 0, 0, 0, 0, 0], consumed: 2))
    }

    /// Method reply, auth status, CONNECT reply with an IPv4 bound address, then app data.
    var authenticatedReply: [UInt8] {
        [0x05, 0x02] + [0x01, 0x00] + [0x05, 0x00, 0x00, 0x01, 10, 0, 0, 1, 0x04, 0x38] + [UInt8]("HTTP/1.1 200 OK\r\n")
    }

    @Test func usernamePasswordWholeByteByByteAndSplit() throws {
        for chunks in splits(authenticatedReply.count) {
            var h = try SOCKS5ClientHandshake(target: example, credentials: alice)
            let run = try drive(&h, authenticatedReply, chunks: chunks)
            #expect(run.sent[0] == [0x05, 0x02, 0x00, 0x02], "greeting offers both methods")
            #expect(run.sent[1] == [0x01, 0x05] + [UInt8]("alice") + [0x06] + [UInt8]("s3cret"), "RFC 1929 message")
            #expect(run.sent[2] == [0x05, 0x01, 0x00, 0x03, 0x0c] + [UInt8]("example.test") + [0x01, 0xbb])
            #expect(run.bound == .some(ProxyTarget(host: .ipv4(IPv4Address(10, 0, 0, 1)), port: 1080)))
            #expect(run.rest == [UInt8]("HTTP/1.1 200 OK\r\n"), "trailing stream bytes are not consumed (chunks \(chunks))")
            #expect(h.isEstablished)
        }
    }

    @Test func noAuthenticationWithDomainAndIPv6BoundAddresses() throws {
        let domainBound: [UInt8] = [0x05, 0x00, 0x00, 0x03, 0x05] + [UInt8]("proxy") + [0x00, 0x50]
        let v6Bound: [UInt8] = [0x05, 0x00, 0x00, 0x04] + Array(repeating: 0, count: 15) + [1, 0x00, 0x35]
        for (reply, bound) in [(domainBound, ProxyTarget(host: .domain("proxy"), port: 80)),
                               (v6Bound, ProxyTarget(host: .ipv6(.loopback), port: 53))] {
            let input: [UInt8] = [0x05, 0x00] + reply + [0xde, 0xad]
            for chunks in splits(input.count) {
                var h = try SOCKS5ClientHandshake(target: example, credentials: nil)
                let run = try drive(&h, input, chunks: chunks)
                #expect(run.sent.count == 2)
                #expect(run.bound == .some(bound))
                #expect(run.rest == [0xde, 0xad])
            }
        }
    }

    /// A server may waive the credentials we offered.
    @Test func serverWaivesAuthentication() throws {
        var h = try SOCKS5ClientHandshake(target: example, credentials: alice)
        let run = try drive(&h, [0x05, 0x00, 0x05, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
        #expect(run.sent.count == 2)
        #expect(run.established)
    }

    @Test(arguments: [
        (UInt8(1), RelayError.generalFailure), (2, .notAllowed), (3, .networkUnreachable), (4, .hostUnreachable),
        (5, .connectionRefused), (6, .ttlExpired), (7, .commandNotSupported), (8, .addressTypeNotSupported),
        (9, .protocolViolation(.replyCode)), (0xff, .protocolViolation(.replyCode)),
    ])
    func everyReplyCode(code: UInt8, error: RelayError) throws {
        // Full reply and the short two-byte form some servers send before closing.
        for reply in [[0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0], [0x05, code]] as [[UInt8]] {
            for chunks in splits(reply.count + 2) {
                var h = try SOCKS5ClientHandshake(target: example, credentials: nil)
                #expect(throws: error) { try drive(&h, [0x05, 0x00] + reply, chunks: chunks) }
                // The machine stays failed.
                #expect(throws: error) { try feed(&h, [0x05]) }
            }
        }
    }

    @Test func replyCodesMapToWhatTheAppSees() {
        #expect(RelayError.connectionRefused.appFacing == .reset)
        #expect(RelayError.hostUnreachable.appFacing == .unreachable(.host))
        #expect(RelayError.ttlExpired.appFacing == .unreachable(.host))
        #expect(RelayError.networkUnreachable.appFacing == .unreachable(.network))
        #expect(RelayError.notAllowed.appFacing == .unreachable(.administrativelyProhibited))
        #expect(RelayError.generalFailure.appFacing == .badGateway)
        #expect(RelayError.authRejected.appFacing == .badGateway)
        #expect(RelayError.protocolViolation(.version).appFacing == .badGateway)
        #expect(RelayError.unexpectedClose.appFacing == .badGateway)
        #expect(RelayError.timedOut(.connect).appFacing == .unreachable(.host))
        #expect(RelayError.timedOut(.greeting).appFacing == .badGateway)
        #expect(AppFacingFailure.Unreachable.host.icmpv4Code == 1)
        #expect(AppFacingFailure.Unreachable.host.icmpv6Code == 3)
        #expect(AppFacingFailure.Unreachable.administrativelyProhibited.icmpv4Code == 13)
    }

    @Test func authRejected() throws {
        for chunks in splits(4) {
            var h = try SOCKS5ClientHandshake(target: example, credentials: alice)
            #expect(throws: RelayError.authRejected) { try drive(&h, [0x05, 0x02, 0x01, 0x01], chunks: chunks) }
        }
    }

    @Test(arguments: [
        ([UInt8]([0x04, 0x00]), RelayError.protocolViolation(.version)),         // SOCKS4 answering
        ([0x05, 0xff], .noAcceptableMethod),
        ([0x05, 0x01], .protocolViolation(.method)),                             // GSSAPI, never offered
        ([0x05, 0x02], .protocolViolation(.method)),                             // user/pass without credentials
        ([0x05, 0x00, 0x04, 0x00], .protocolViolation(.version)),                // reply with a bad version
        ([0x05, 0x00, 0x05, 0x00, 0x01], .protocolViolation(.reserved)),
        ([0x05, 0x00, 0x05, 0x00, 0x00, 0x02], .protocolViolation(.addressType)),
        ([0x05, 0x00, 0x05, 0x00, 0x00, 0x03, 0x00, 0x00, 0x50], .protocolViolation(.domainName)),
        ([0x05, 0x00, 0x05, 0x00, 0x00, 0x03, 0x02, 0x0a, 0x0d, 0x00, 0x50], .protocolViolation(.domainName)),
        ([UInt8]("HTTP/1.1 400 Bad Request\r\n\r\n"), .protocolViolation(.version)),
    ])
    func garbageReplies(input: [UInt8], error: RelayError) throws {
        for chunks in splits(input.count) {
            var h = try SOCKS5ClientHandshake(target: example, credentials: nil)
            #expect(throws: error) { try drive(&h, input, chunks: chunks) }
        }
    }

    @Test func badAuthVersion() throws {
        var h = try SOCKS5ClientHandshake(target: example, credentials: alice)
        #expect(throws: RelayError.protocolViolation(.authVersion)) { try drive(&h, [0x05, 0x02, 0x05, 0x00]) }
    }

    /// Every proper prefix of a good exchange asks for more bytes and never decides.
    @Test func truncatedRepliesNeedMore() throws {
        let input = authenticatedReply.prefix(14)
        for cut in 0 ..< input.count {
            var h = try SOCKS5ClientHandshake(target: example, credentials: alice)
            let run = try drive(&h, Array(input.prefix(cut)), chunks: [1])
            #expect(!run.established)
            #expect(h.inputClosed() == .unexpectedClose)
            #expect(h.stage != .connect)
        }
    }

    @Test func bytesBeforeTheGreetingAreAViolation() throws {
        var h = try SOCKS5ClientHandshake(target: example, credentials: nil)
        #expect(throws: RelayError.protocolViolation(.unexpectedBytes)) { try feed(&h, [0x05]) }
    }

    @Test func stagesFollowTheExchange() throws {
        var h = try SOCKS5ClientHandshake(target: example, credentials: alice)
        #expect(h.stage == .connect)
        _ = h.start()
        #expect(h.stage == .greeting)
        _ = try feed(&h, [0x05, 0x02])
        #expect(h.stage == .auth)
        _ = try feed(&h, [0x01, 0x00])
        #expect(h.stage == .reply)
    }

    @Test func unrepresentableInputsFailBeforeSending() {
        let long = String(repeating: "a", count: 256)
        #expect(throws: RelayError.unrepresentable(.domainLength)) {
            try SOCKS5ClientHandshake(target: ProxyTarget(host: .domain(long), port: 1), credentials: nil)
        }
        #expect(throws: RelayError.unrepresentable(.credentialLength)) {
            try SOCKS5ClientHandshake(target: example, credentials: ProxyCredentials(username: "", password: "x"))
        }
        #expect(throws: RelayError.unrepresentable(.credentialLength)) {
            try SOCKS5ClientHandshake(target: example, credentials: ProxyCredentials(username: "u", password: long))
        }
    }
}
