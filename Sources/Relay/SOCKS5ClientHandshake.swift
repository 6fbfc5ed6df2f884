/// The client side of a SOCKS5 handshake (RFC 1928, with RFC 1929
/// username/password), as a state machine that never does I/O: `start()` gives
/// the greeting, `receive(_:)` reads the proxy's bytes and says what to send next.
///
///     initial ─start→ awaitingMethod ─(method 0)──────────────→ awaitingReply ─(REP 0)→ established
///                                    └(method 2)→ awaitingAuth ─(status 0)┘
///     any state ─bad bytes / refusal→ failed (every later call throws the same error)
public struct SOCKS5ClientHandshake: ProxyClientHandshake, CustomStringConvertible {
    public enum Command: Hashable, Sendable {
        case connect
        case udpAssociate
    }

    enum State: Hashable, Sendable {
        case initial
        case awaitingMethod
        case awaitingAuth
        case awaitingReply
        case established
        case failed(RelayError)
    }

    public let target: ProxyTarget
    public let credentials: ProxyCredentials?
    public let command: Command
    private(set) var state: State = .initial

    /// Throws `.unrepresentable` when the target's name or the credentials do not
    /// fit SOCKS5's one-byte lengths, before anything is sent.
    public init(target: ProxyTarget, credentials: ProxyCredentials?, command: Command = .connect) throws(RelayError) {
        if let credentials, !credentials.fitsSOCKS5 { throw .unrepresentable(.credentialLength) }
        guard SOCKS5Address.encodedLength(target) != nil else { throw .unrepresentable(.domainLength) }
        self.target = target
        self.credentials = credentials
        self.command = command
    }

    /// The stage whose deadline applies now (`HandshakeDeadlines`).
    public var stage: HandshakeStage {
        switch state {
        case .initial: return .connect
        case .awaitingMethod: return .greeting
        case .awaitingAuth: return .auth
        case .awaitingReply, .established, .failed: return .reply
        }
    }

    public var isEstablished: Bool { state == .established }

    /// The greeting, once the TCP connection to the proxy is up. Offers
    /// no-authentication, and username/password too when we have credentials
    /// (a server may still waive them).
    public mutating func start() -> [UInt8] {
        precondition(state == .initial, "SOCKS5ClientHandshake.start() called twice")
        state = .awaitingMethod
        if credentials != nil {
            return [SOCKS5.version, 2, SOCKS5.Method.noAuthentication, SOCKS5.Method.usernamePassword]
        }
        return [SOCKS5.version, 1, SOCKS5.Method.noAuthentication]
    }

    /// Reads what the proxy has sent so far (all of it that is not yet consumed).
    /// Nil: need more bytes. Throws on refusal or garbage; afterwards the machine
    /// stays failed.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer) throws(RelayError) -> HandshakeStep? {
        do {
            return try step(bytes)
        } catch {
            state = .failed(error)
            throw error
        }
    }

    /// The proxy closed its side. Always an error during a handshake.
    public mutating func inputClosed() -> RelayError {
        if case let .failed(error) = state { return error }
        state = .failed(.unexpectedClose)
        return .unexpectedClose
    }

    private mutating func step(_ bytes: UnsafeRawBufferPointer) throws(RelayError) -> HandshakeStep? {
        switch state {
        case .initial:
            // The server speaks only after our greeting.
            if bytes.isEmpty { return nil }
            throw .protocolViolation(.unexpectedBytes)

        case .awaitingMethod:
            // +----+--------+
            // |VER | METHOD |
            if bytes.count >= 1, bytes.u8(0) != SOCKS5.version { throw .protocolViolation(.version) }
            guard bytes.count >= 2 else { return nil }
            switch bytes.u8(1) {
            case SOCKS5.Method.noAuthentication:
                state = .awaitingReply
                return .send(request(), consumed: 2)
            case SOCKS5.Method.usernamePassword:
                guard let credentials else { throw .protocolViolation(.method) }
                state = .awaitingAuth
                return .send(Self.authentication(credentials), consumed: 2)
            case SOCKS5.Method.noAcceptable:
                throw .noAcceptableMethod
            default:
                throw .protocolViolation(.method)
            }

        case .awaitingAuth:
            // RFC 1929: +----+--------+
            //           |VER | STATUS |
            if bytes.count >= 1, bytes.u8(0) != SOCKS5.authVersion { throw .protocolViolation(.authVersion) }
            guard bytes.count >= 2 else { return nil }
            guard bytes.u8(1) == 0 else { throw .authRejected }
            state = .awaitingReply
            return .send(request(), consumed: 2)

        case .awaitingReply:
            // +----+-----+-------+------+----------+----------+
            // |VER | REP |  RSV  | ATYP | BND.ADDR | BND.PORT |
            if bytes.count >= 1, bytes.u8(0) != SOCKS5.version { throw .protocolViolation(.version) }
            // A refusal is final as soon as REP arrives: some servers close
            // without sending the address that would follow it.
            if bytes.count >= 2, let error = SOCKS5.error(forReply: bytes.u8(1)) { throw error }
            if bytes.count >= 3, bytes.u8(2) != 0 { throw .protocolViolation(.reserved) }
            guard bytes.count >= 4 else { return nil }
            switch try SOCKS5Address.parse(bytes, at: 3) {
            case .needMore:
                return nil
            case let .target(bound, end):
                state = .established
                return .established(bound: bound, consumed: end)
            }

        case .established:
            preconditionFailure("SOCKS5ClientHandshake.receive after establishment: the bytes belong to the stream")

        case let .failed(error):
            throw error
        }
    }

    /// VER CMD RSV ATYP DST.ADDR DST.PORT. The init checked the target fits.
    func request() -> [UInt8] {
        let cmd: SOCKS5.Command
        switch command {
        case .connect: cmd = .connect
        case .udpAssociate: cmd = .udpAssociate
        }
        let address = SOCKS5Address.encodedLength(target) ?? 0
        return [UInt8](unsafeUninitializedCapacity: 3 + address) { storage, count in
            let raw = UnsafeMutableRawBufferPointer(storage)
            raw.setU8(0, SOCKS5.version)
            raw.setU8(1, cmd.rawValue)
            raw.setU8(2, 0)
            count = SOCKS5Address.write(target, into: raw, at: 3)
        }
    }

    /// RFC 1929 §2: VER ULEN UNAME PLEN PASSWD. The init checked the lengths.
    static func authentication(_ credentials: ProxyCredentials) -> [UInt8] {
        var out: [UInt8] = [SOCKS5.authVersion]
        out.reserveCapacity(3 + credentials.username.utf8.count + credentials.password.utf8.count)
        out.append(UInt8(truncatingIfNeeded: credentials.username.utf8.count))
        out.append(contentsOf: credentials.username.utf8)
        out.append(UInt8(truncatingIfNeeded: credentials.password.utf8.count))
        out.append(contentsOf: credentials.password.utf8)
        return out
    }

    public var description: String {
        let cmd = command == .connect ? "CONNECT" : "UDP ASSOCIATE"
        return "SOCKS5 \(cmd) \(target) [\(state)]"
    }
}
