/// The canned answers of the URL Rewrite reject modes (and REJECT-TINYGIF):
/// status, body and its type, as Surge sends them.
public enum RejectResponse: String, Sendable, Equatable, CaseIterable, CustomStringConvertible {
    /// 404, empty body.
    case reject
    /// 200, empty body.
    case reject200 = "reject-200"
    /// 200, a 1x1 transparent GIF, so an ad slot collapses quietly.
    case rejectImage = "reject-img"
    /// 200, `{}`.
    case rejectDictionary = "reject-dict"
    /// 200, `[]`.
    case rejectArray = "reject-array"

    public init?(_ mode: URLRewriteMode) {
        switch mode {
        case .reject: self = .reject
        case .reject200: self = .reject200
        case .rejectImage: self = .rejectImage
        case .rejectDictionary: self = .rejectDictionary
        case .rejectArray: self = .rejectArray
        case .header, .found, .temporaryRedirect: return nil
        }
    }

    public var status: Int { self == .reject ? 404 : 200 }

    public var body: [UInt8] {
        switch self {
        case .reject, .reject200: return []
        case .rejectImage: return TinyGIF.bytes
        case .rejectDictionary: return Array("{}".utf8)
        case .rejectArray: return Array("[]".utf8)
        }
    }

    /// Nil for the empty bodies, which need no type.
    public var contentType: String? {
        switch self {
        case .reject, .reject200: return nil
        case .rejectImage: return "image/gif"
        case .rejectDictionary, .rejectArray: return "application/json"
        }
    }

    public var description: String { rawValue }
}

/// The smallest transparent GIF: GIF89a, 1x1, a two-colour table, a graphic
/// control extension marking colour 0 transparent, one LZW-coded pixel.
public enum TinyGIF {
    public static let bytes: [UInt8] = [
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, // header, screen descriptor
        0x00, 0x00, 0x00, 0xff, 0xff, 0xff,                                           // colour table
        0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00,                               // graphic control: transparent
        0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,                   // image descriptor
        0x02, 0x02, 0x44, 0x01, 0x00,                                                 // LZW data
        0x3b,                                                                         // trailer
    ]
}
