/// Why a connection ends, as TLS says it on the wire (RFC 8446 §6). Every
/// error the layer throws carries the alert the peer is owed, so the engine
/// sends exactly one fatal alert and closes, whatever went wrong.
package enum TLSAlert: UInt8, Sendable, Error, CustomStringConvertible {
    case closeNotify = 0
    case unexpectedMessage = 10
    case badRecordMAC = 20
    case recordOverflow = 22
    case handshakeFailure = 40
    case badCertificate = 42
    case unsupportedCertificate = 43
    case certificateRevoked = 44
    case certificateExpired = 45
    case certificateUnknown = 46
    case illegalParameter = 47
    case unknownCA = 48
    case decodeError = 50
    case decryptError = 51
    case protocolVersion = 70
    case insufficientSecurity = 71
    case internalError = 80
    case inappropriateFallback = 86
    case userCanceled = 90
    case missingExtension = 109
    case unsupportedExtension = 110
    case unrecognizedName = 112
    case noApplicationProtocol = 120

    package var description: String {
        switch self {
        case .closeNotify: "close_notify"
        case .unexpectedMessage: "unexpected_message"
        case .badRecordMAC: "bad_record_mac"
        case .recordOverflow: "record_overflow"
        case .handshakeFailure: "handshake_failure"
        case .badCertificate: "bad_certificate"
        case .unsupportedCertificate: "unsupported_certificate"
        case .certificateRevoked: "certificate_revoked"
        case .certificateExpired: "certificate_expired"
        case .certificateUnknown: "certificate_unknown"
        case .illegalParameter: "illegal_parameter"
        case .unknownCA: "unknown_ca"
        case .decodeError: "decode_error"
        case .decryptError: "decrypt_error"
        case .protocolVersion: "protocol_version"
        case .insufficientSecurity: "insufficient_security"
        case .internalError: "internal_error"
        case .inappropriateFallback: "inappropriate_fallback"
        case .userCanceled: "user_canceled"
        case .missingExtension: "missing_extension"
        case .unsupportedExtension: "unsupported_extension"
        case .unrecognizedName: "unrecognized_name"
        case .noApplicationProtocol: "no_application_protocol"
        }
    }
}

/// A fatal error: the alert to send, and for logs, what was wrong.
package struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    package var alert: TLSAlert
    package var reason: String
    /// The peer sent this alert: nothing is owed back (§6.2).
    package var sentByPeer: Bool

    package init(_ alert: TLSAlert, _ reason: String, sentByPeer: Bool = false) {
        self.alert = alert
        self.reason = reason
        self.sentByPeer = sentByPeer
    }

    package var description: String { sentByPeer ? "the peer sent \(alert)" : "\(alert): \(reason)" }
}
