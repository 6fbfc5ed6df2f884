/// RFC 4648 base64, for HAR bodies, basic auth and rule files, without Foundation.
public enum Base64 {
    public enum Alphabet: Sendable {
        /// `+` and `/` (§4).
        case standard
        /// `-` and `_` (§5), for URLs and file names.
        case urlSafe
    }

    private static let standardTable: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlSafeTable: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: UnsafeRawBufferPointer, alphabet: Alphabet = .standard, padding: Bool = true)
        -> String
    {
        let table = alphabet == .standard ? standardTable : urlSafeTable
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(table[Int(v >> 18 & 63)])
            out.append(table[Int(v >> 12 & 63)])
            out.append(table[Int(v >> 6 & 63)])
            out.append(table[Int(v & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            let v = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
            out.append(table[Int(v >> 18 & 63)])
            out.append(table[Int(v >> 12 & 63)])
            if rest == 2 { out.append(table[Int(v >> 6 & 63)]) }
            if padding { out.append(contentsOf: rest == 2 ? [UInt8(ascii: "=")] : [UInt8(ascii: "="), UInt8(ascii: "=")]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func encode(_ bytes: [UInt8], alphabet: Alphabet = .standard, padding: Bool = true) -> String {
        bytes.withUnsafeBytes { encode($0, alphabet: alphabet, padding: padding) }
    }

    public static func encode(_ text: String, alphabet: Alphabet = .standard, padding: Bool = true) -> String {
        encode(Array(text.utf8), alphabet: alphabet, padding: padding)
    }

    /// The bytes, or nil for a character outside the alphabet, misplaced
    /// padding or an impossible length. Padding may be left out.
    public static func decode(_ text: String, alphabet: Alphabet = .standard) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        var padding = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            // Data after padding.
            guard padding == 0, let v = value(byte, alphabet) else { return nil }
            values.append(v)
        }
        if padding > 0 {
            guard padding <= 2, (values.count + padding) % 4 == 0 else { return nil }
        }
        guard values.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var i = 0
        while i + 4 <= values.count {
            let v = UInt32(values[i]) << 18 | UInt32(values[i + 1]) << 12 | UInt32(values[i + 2]) << 6 | UInt32(values[i + 3])
            out.append(UInt8(v >> 16 & 0xFF))
            out.append(UInt8(v >> 8 & 0xFF))
            out.append(UInt8(v & 0xFF))
            i += 4
        }
        switch values.count - i {
        case 2:
            out.append(values[i] << 2 | values[i + 1] >> 4)
        case 3:
            out.append(values[i] << 2 | values[i + 1] >> 4)
            out.append((values[i + 1] & 0x0F) << 4 | values[i + 2] >> 2)
        default:
            break
        }
        return out
    }

    @inline(__always)
    private static func value(_ byte: UInt8, _ alphabet: Alphabet) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A") ... UInt8(ascii: "Z"): return byte - UInt8(ascii: "A")
        case UInt8(ascii: "a") ... UInt8(ascii: "z"): return byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): return byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return alphabet == .standard ? 62 : nil
        case UInt8(ascii: "/"): return alphabet == .standard ? 63 : nil
        case UInt8(ascii: "-"): return alphabet == .urlSafe ? 62 : nil
        case UInt8(ascii: "_"): return alphabet == .urlSafe ? 63 : nil
        default: return nil
        }
    }
}
