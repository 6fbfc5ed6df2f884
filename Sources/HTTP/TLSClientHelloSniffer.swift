/// What the first bytes of a TLS connection say about where it goes.
public enum SniffResult: Sendable, Equatable, CustomStringConvertible {
    case needMore
    /// The ClientHello's server_name (RFC 6066 §3), lowercased.
    case serverName(String)
    /// A valid ClientHello without a usable server_name, or one too large to
    /// wait for.
    case noServerName
    /// Not a TLS ClientHello.
    case notTLS

    /// The name, when there is one.
    public var serverName: String? {
        guard case let .serverName(name) = self else { return nil }
        return name
    }

    public var description: String {
        switch self {
        case .needMore: "need more"
        case let .serverName(name): "SNI \(name)"
        case .noServerName: "no SNI"
        case .notTLS: "not TLS"
        }
    }
}

/// Reads the server name from an app's ClientHello as it arrives, in any
/// number of TCP segments and TLS records (a large hello, say with a
/// post-quantum key share, can span records). Only the handshake bytes are
/// kept, up to `limit`; the caller forwards the original bytes itself.
public struct TLSClientHelloSniffer: Sendable {
    public static let defaultLimit = 16 * 1024

    public let limit: Int
    /// The protocols of the ALPN extension (RFC 7301), once the hello is read.
    public private(set) var applicationProtocols: [String] = []

    private var recordHeader: UInt64 = 0
    private var recordHeaderCount = 0
    private var recordRemaining = 0
    private var handshake: [UInt8] = []
    private var fed = 0
    private var result: SniffResult? = nil

    public init(limit: Int = TLSClientHelloSniffer.defaultLimit) {
        self.limit = limit
    }

    /// Takes the next bytes the app sent. Once the result is other than
    /// `.needMore` it stays the same whatever is fed afterwards.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> SniffResult {
        if let result { return result }
        let outcome = consume(bytes)
        if outcome != .needMore {
            result = outcome
            handshake = []
        }
        return outcome
    }

    private mutating func consume(_ bytes: UnsafeRawBufferPointer) -> SniffResult {
        var i = 0
        while i < bytes.count {
            if recordHeaderCount < 5 {
                let byte = bytes[i]
                i += 1
                fed += 1
                // Refuse at the first impossible byte, so a plain-text
                // protocol is told apart without waiting for five bytes.
                switch recordHeaderCount {
                case 0: if byte != 0x16 { return .notTLS }
                case 1: if byte != 0x03 { return .notTLS }
                case 2: if byte > 0x04 { return .notTLS }
                default: break
                }
                recordHeader = recordHeader << 8 | UInt64(byte)
                recordHeaderCount += 1
                if recordHeaderCount == 5 {
                    let length = Int(recordHeader & 0xFFFF)
                    // RFC 8446 §5.1: a plaintext record holds 1 to 2^14 bytes.
                    guard length >= 1, length <= 16384 else { return .notTLS }
                    recordRemaining = length
                }
                continue
            }
            let n = min(recordRemaining, bytes.count - i)
            let room = limit - handshake.count
            if n > room {
                return .noServerName
            }
            handshake.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i ..< i + n]))
            i += n
            fed += n
            recordRemaining -= n
            if recordRemaining == 0 {
                recordHeaderCount = 0
                recordHeader = 0
            }
            if let (outcome, protocols) = handshake.withUnsafeBytes({ Self.readHandshake($0, limit: limit) }) {
                applicationProtocols = protocols
                return outcome
            }
            if fed > limit { return .noServerName }
        }
        return .needMore
    }

    /// The first handshake message, a ClientHello, with its ALPN protocols,
    /// once `handshake` holds it whole; nil while more bytes are needed. TLS
    /// over TCP and QUIC's CRYPTO frames both carry these bytes.
    static func readHandshake(_ handshake: UnsafeRawBufferPointer, limit: Int) -> (SniffResult, [String])? {
        guard handshake.count >= 4 else { return nil }
        // The first handshake message must be a ClientHello (type 1).
        guard handshake[0] == 1 else { return (.notTLS, []) }
        let length = Int(handshake[1]) << 16 | Int(handshake[2]) << 8 | Int(handshake[3])
        if 4 + length > limit { return (.noServerName, []) }
        guard handshake.count >= 4 + length else { return nil }
        return parseClientHello(UnsafeRawBufferPointer(rebasing: handshake[4 ..< 4 + length]))
    }

    /// RFC 8446 §4.1.2 (and 5246 §7.4.1.2, the same layout): version, random,
    /// session id, cipher suites, compression methods, extensions.
    private static func parseClientHello(_ body: UnsafeRawBufferPointer) -> (SniffResult, [String]) {
        var applicationProtocols: [String] = []
        var reader = ByteReader(body)
        guard reader.skip(2 + 32),
              let sessionIDLength = reader.u8(), sessionIDLength <= 32, reader.skip(Int(sessionIDLength)),
              let suitesLength = reader.u16(), suitesLength >= 2, suitesLength % 2 == 0, reader.skip(Int(suitesLength)),
              let compressionLength = reader.u8(), compressionLength >= 1, reader.skip(Int(compressionLength))
        else { return (.notTLS, []) }
        if reader.remaining == 0 { return (.noServerName, []) }
        guard let extensionsLength = reader.u16(), Int(extensionsLength) == reader.remaining else { return (.notTLS, []) }
        var name: String? = nil
        var sawServerName = false
        while reader.remaining > 0 {
            guard let type = reader.u16(), let length = reader.u16(), let data = reader.take(Int(length))
            else { return (.notTLS, []) }
            switch type {
            case 0:
                guard !sawServerName else { return (.notTLS, []) }
                sawServerName = true
                guard let parsed = Self.serverName(data) else { return (.notTLS, []) }
                name = parsed
            case 16:
                guard let protocols = Self.alpn(data) else { return (.notTLS, []) }
                applicationProtocols = protocols
            default:
                continue
            }
        }
        guard let name, !name.isEmpty else { return (.noServerName, applicationProtocols) }
        return (.serverName(name), applicationProtocols)
    }

    /// ServerNameList: the first host_name entry, if it is a valid DNS name;
    /// "" when there is none or it is not a name Sluice would route by.
    private static func serverName(_ data: UnsafeRawBufferPointer) -> String? {
        var reader = ByteReader(data)
        guard let listLength = reader.u16(), Int(listLength) == reader.remaining, listLength > 0 else { return nil }
        while reader.remaining > 0 {
            guard let type = reader.u8(), let length = reader.u16(), let name = reader.take(Int(length)) else {
                return nil
            }
            if type == 0 { return validHostName(name) ?? "" }
        }
        return ""
    }

    /// Letters, digits, hyphens and underscores in dot-separated labels of
    /// 1–63 bytes, 253 in all, no trailing dot (RFC 6066 §3); lowercased.
    static func validHostName(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.count >= 1, bytes.count <= 253 else { return nil }
        var label = 0
        var lowered = [UInt8](repeating: 0, count: bytes.count)
        for (i, byte) in bytes.enumerated() {
            switch byte {
            case UInt8(ascii: "."):
                guard label > 0 else { return nil }
                label = 0
            case UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "0") ... UInt8(ascii: "9"),
                 UInt8(ascii: "A") ... UInt8(ascii: "Z"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                label += 1
            default:
                return nil
            }
            guard label <= 63 else { return nil }
            lowered[i] = HTTPSyntax.lower(byte)
        }
        guard label > 0 else { return nil }
        return String(decoding: lowered, as: UTF8.self)
    }

    private static func alpn(_ data: UnsafeRawBufferPointer) -> [String]? {
        var reader = ByteReader(data)
        guard let listLength = reader.u16(), Int(listLength) == reader.remaining, listLength >= 2 else { return nil }
        var protocols: [String] = []
        while reader.remaining > 0 {
            guard let length = reader.u8(), length > 0, let name = reader.take(Int(length)) else { return nil }
            protocols.append(String(decoding: name, as: UTF8.self))
        }
        return protocols
    }
}

/// A bounds-checked cursor: every read says nil instead of trapping.
struct ByteReader {
    private let bytes: UnsafeRawBufferPointer
    private(set) var position = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var remaining: Int { bytes.count - position }

    mutating func u8() -> UInt8? {
        guard remaining >= 1 else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    func peek() -> UInt8? { remaining >= 1 ? bytes[position] : nil }

    mutating func u16() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { position += 2 }
        return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
    }

    mutating func skip(_ n: Int) -> Bool {
        guard n >= 0, remaining >= n else { return false }
        position += n
        return true
    }

    mutating func take(_ n: Int) -> UnsafeRawBufferPointer? {
        guard n >= 0, remaining >= n else { return nil }
        defer { position += n }
        return bytes.window(position, n)
    }
}

/// A first guess at what an app speaks, from its first bytes, before any
/// parser commits: HTTP (a method token and a space) or TLS (a handshake
/// record of version 3.x).
public enum ProtocolGuess: Sendable, Equatable, CustomStringConvertible {
    case http
    case tls
    case other
    case needMore

    /// Method tokens longer than this are not worth waiting for.
    static let longestMethod = 24

    public static func guess(_ firstBytes: UnsafeRawBufferPointer) -> ProtocolGuess {
        guard let first = firstBytes.first else { return .needMore }
        if first == 0x16 {
            guard firstBytes.count >= 2 else { return .needMore }
            return firstBytes[1] == 0x03 ? .tls : .other
        }
        // Registered methods are upper-case letters and hyphens (RFC 9110
        // §16.1.1); asking for that rather than any token keeps most other
        // text protocols out. A wrong guess only costs a 400 from the parser.
        for (i, byte) in firstBytes.enumerated() {
            if byte == 0x20 { return i > 0 ? .http : .other }
            let methodByte = (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "_")
            guard methodByte, i < longestMethod else { return .other }
        }
        return .needMore
    }

    public var description: String {
        switch self {
        case .http: "HTTP"
        case .tls: "TLS"
        case .other: "other"
        case .needMore: "need more"
        }
    }
}
