internal import Crypto

/// The server side of SOCKS5 for `sluice proxy`'s local listener: negotiates
/// the method, checks RFC 1929 credentials when it has some, and turns the
/// request into an action. The engine connects (or binds a UDP relay) and
/// hands the outcome back to `reply(for:)` for the bytes to answer with.
///
///     awaitingGreeting ─(method 0)──────────────────→ awaitingRequest ─CONNECT/UDP ASSOCIATE→ awaitingOutcome ─reply→ open
///                      └(method 2)→ awaitingAuth ─(ok)┘
///     refusals: `.refuse(bytes, reason)`: write the bytes, then close.
///     garbage that has no answer in the protocol (a wrong version): throws; close.
public struct SOCKS5ServerHandshake: Sendable, CustomStringConvertible {
    public enum Action: Hashable, Sendable, CustomStringConvertible {
        /// Write these bytes and keep reading.
        case send([UInt8], consumed: Int)
        /// Connect to the target, then call `reply(for:)`.
        case connect(ProxyTarget, consumed: Int)
        /// Open a UDP relay, then call `reply(for:)` with its address. The hint
        /// is where the client says it will send from (often 0.0.0.0:0: unknown).
        case associate(clientHint: ProxyTarget, consumed: Int)
        /// Write these bytes, then close: the client is refused for `reason`.
        case refuse([UInt8], reason: RelayError)

        public var description: String {
            switch self {
            case let .send(bytes, consumed): return "send \(bytes.count) bytes (consumed \(consumed))"
            case let .connect(target, consumed): return "CONNECT \(target) (consumed \(consumed))"
            case let .associate(hint, consumed): return "UDP ASSOCIATE from \(hint) (consumed \(consumed))"
            case let .refuse(bytes, reason): return "refuse (\(reason)), send \(bytes.count) bytes and close"
            }
        }
    }

    public enum Outcome: Hashable, Sendable {
        /// Connected (BND is our local address towards the target), or for UDP
        /// ASSOCIATE: the address the client must send its datagrams to.
        case succeeded(bound: ProxyTarget)
        case failed(RelayError)
    }

    enum State: Hashable, Sendable {
        case awaitingGreeting
        case awaitingAuth
        case awaitingRequest
        case awaitingOutcome
        case open
        case closed
    }

    public let credentials: ProxyCredentials?
    private(set) var state: State = .awaitingGreeting

    /// With credentials, clients must authenticate (RFC 1929); without, only
    /// "no authentication" is accepted.
    public init(credentials: ProxyCredentials?) {
        self.credentials = credentials
    }

    /// The stage whose deadline applies now: how long a client may take.
    public var stage: HandshakeStage {
        switch state {
        case .awaitingGreeting: return .greeting
        case .awaitingAuth: return .auth
        case .awaitingRequest, .awaitingOutcome, .open, .closed: return .reply
        }
    }

    public mutating func receive(_ bytes: UnsafeRawBufferPointer) throws(RelayError) -> Action? {
        do {
            let action = try step(bytes)
            if case .refuse = action { state = .closed }
            return action
        } catch {
            state = .closed
            throw error
        }
    }

    private mutating func step(_ bytes: UnsafeRawBufferPointer) throws(RelayError) -> Action? {
        switch state {
        case .awaitingGreeting:
            // +----+----------+----------+
            // |VER | NMETHODS | METHODS  |
            if bytes.count >= 1, bytes.u8(0) != SOCKS5.version { throw .protocolViolation(.version) }
            guard bytes.count >= 2 else { return nil }
            let count = Int(bytes.u8(1))
            guard bytes.count >= 2 + count else { return nil }
            let wanted = credentials == nil ? SOCKS5.Method.noAuthentication : SOCKS5.Method.usernamePassword
            guard bytes.sub(2, count).contains(wanted) else {
                return .refuse([SOCKS5.version, SOCKS5.Method.noAcceptable], reason: .noAcceptableMethod)
            }
            state = credentials == nil ? .awaitingRequest : .awaitingAuth
            return .send([SOCKS5.version, wanted], consumed: 2 + count)

        case .awaitingAuth:
            // RFC 1929: +----+------+----------+------+----------+
            //           |VER | ULEN |  UNAME   | PLEN |  PASSWD  |
            if bytes.count >= 1, bytes.u8(0) != SOCKS5.authVersion {
                return .refuse([SOCKS5.authVersion, 1], reason: .protocolViolation(.authVersion))
            }
            guard bytes.count >= 2 else { return nil }
            let userLength = Int(bytes.u8(1))
            guard bytes.count >= 2 + userLength + 1 else { return nil }
            let passwordLength = Int(bytes.u8(2 + userLength))
            let end = 2 + userLength + 1 + passwordLength
            guard bytes.count >= end else { return nil }
            guard let credentials else { preconditionFailure("awaitingAuth without credentials") }
            // Both compared, always, so the timing does not tell which one was wrong.
            let userMatches = constantTimeEquals(credentials.username.utf8, bytes.sub(2, userLength))
            let passwordMatches = constantTimeEquals(credentials.password.utf8, bytes.sub(3 + userLength, passwordLength))
            guard userMatches && passwordMatches else {
                return .refuse([SOCKS5.authVersion, 1], reason: .authRejected)
            }
            state = .awaitingRequest
            return .send([SOCKS5.authVersion, 0], consumed: end)

        case .awaitingRequest:
            // +----+-----+-------+------+----------+----------+
            // |VER | CMD |  RSV  | ATYP | DST.ADDR | DST.PORT |
            if bytes.count >= 1, bytes.u8(0) != SOCKS5.version { throw .protocolViolation(.version) }
            guard bytes.count >= 4 else { return nil }
            let command = SOCKS5.Command(rawValue: bytes.u8(1))
            guard command == .connect || command == .udpAssociate else {
                return Self.refusal(SOCKS5.Reply.commandNotSupported, .commandNotSupported)
            }
            guard bytes.u8(2) == 0 else {
                return Self.refusal(SOCKS5.Reply.generalFailure, .protocolViolation(.reserved))
            }
            let parsed: SOCKS5Address.Parsed
            do {
                parsed = try SOCKS5Address.parse(bytes, at: 3)
            } catch {
                if error == .protocolViolation(.addressType) {
                    return Self.refusal(SOCKS5.Reply.addressTypeNotSupported, .addressTypeNotSupported)
                }
                return Self.refusal(SOCKS5.Reply.generalFailure, error)
            }
            switch parsed {
            case .needMore:
                return nil
            case let .target(target, end):
                state = .awaitingOutcome
                if command == .udpAssociate { return .associate(clientHint: target, consumed: end) }
                return .connect(target, consumed: end)
            }

        case .awaitingOutcome:
            // Pipelined data after the request waits in the engine's buffer; a
            // client may not send anything else before our reply, but TCP lets it.
            return nil

        case .open:
            preconditionFailure("SOCKS5ServerHandshake.receive after the reply: the bytes belong to the stream")

        case .closed:
            throw .protocolViolation(.unexpectedBytes)
        }
    }

    /// The reply to CONNECT or UDP ASSOCIATE once the engine knows the outcome.
    /// After a failure the engine writes it and closes.
    public mutating func reply(for outcome: Outcome) -> [UInt8] {
        precondition(state == .awaitingOutcome, "SOCKS5ServerHandshake.reply(for:) without a request")
        switch outcome {
        case let .succeeded(bound):
            // A name too long for SOCKS5 cannot be a bound address we made; say 0.0.0.0:0.
            let address = SOCKS5Address.bytes(bound) ?? SOCKS5Address.bytes(ProxyTarget(host: .ipv4(.any), port: 0)) ?? []
            state = .open
            return [SOCKS5.version, SOCKS5.Reply.succeeded, 0] + address
        case let .failed(error):
            state = .closed
            return Self.replyBytes(SOCKS5.reply(for: error))
        }
    }

    public var isOpen: Bool { state == .open }

    static func replyBytes(_ code: UInt8) -> [UInt8] {
        [SOCKS5.version, code, 0, SOCKS5.AddressType.ipv4, 0, 0, 0, 0, 0, 0]
    }

    static func refusal(_ code: UInt8, _ reason: RelayError) -> Action {
        .refuse(replyBytes(code), reason: reason)
    }

    public var description: String { "SOCKS5 server [\(state)]" }
}
