/// What one call into a TLS state machine produced: bytes for the peer, the
/// application data that arrived, and what changed. The engine writes
/// `toPeer` before anything else, so a handshake flight leaves in order.
package struct TLSOutput: Sendable, Equatable {
    package var toPeer: [UInt8] = []
    package var applicationData: [UInt8] = []
    /// Set on the call that finished the handshake.
    package var handshakeCompleted = false
    /// The peer sent close_notify: no more data will come from it (§6.1).
    package var peerClosed = false

    package init() {}
}

/// What `receiveInPlace` made of the record at the start of a buffer.
package enum InPlaceReceipt: Equatable {
    case needMore
    /// The next `count` bytes are for `receive`.
    case notInPlace(count: Int)
    case applicationData(consumed: Int, content: Range<Int>)
    case output(consumed: Int, TLSOutput)
}

/// Where a connection is, for both sides. One `switch` over it decides
/// what each arriving handshake message may be (RFC 8446 §A.1, §A.2).
package enum TLSHandshakeState: Sendable, Equatable, CustomStringConvertible {
    /// Server: waiting for the ClientHello (or the second, after a retry).
    case awaitingClientHello(retried: Bool)
    /// Server: its flight is sent; the client's Finished is due.
    case awaitingClientFinished
    /// Client: its ClientHello is sent.
    case awaitingServerHello(retried: Bool)
    case awaitingEncryptedExtensions
    case awaitingCertificate
    case awaitingCertificateVerify
    case awaitingServerFinished
    /// Client, TLS 1.2 (RFC 5246 §7.3): the ServerHello chose 1.2; the chain is due.
    case awaitingServerCertificate12
    case awaitingServerKeyExchange12
    /// A CertificateRequest may come before the ServerHelloDone.
    case awaitingServerHelloDone12
    /// The client's flight is sent; the server's ChangeCipherSpec and Finished are due.
    case awaitingServerFinished12
    case connected
    case closed

    package var description: String {
        switch self {
        case .awaitingClientHello(let retried): retried ? "WAIT_CH2" : "WAIT_CH"
        case .awaitingClientFinished: "WAIT_FINISHED"
        case .awaitingServerHello(let retried): retried ? "WAIT_SH2" : "WAIT_SH"
        case .awaitingEncryptedExtensions: "WAIT_EE"
        case .awaitingCertificate: "WAIT_CERT"
        case .awaitingCertificateVerify: "WAIT_CV"
        case .awaitingServerFinished: "WAIT_SF"
        case .awaitingServerCertificate12: "WAIT_CERT_12"
        case .awaitingServerKeyExchange12: "WAIT_SKE_12"
        case .awaitingServerHelloDone12: "WAIT_SHD_12"
        case .awaitingServerFinished12: "WAIT_SF_12"
        case .connected: "CONNECTED"
        case .closed: "CLOSED"
        }
    }
}
