/// RFC 4648 §4 base64, for HTTP Basic credentials (RFC 7617) only: small
/// inputs, so plain arrays are fine here.
enum Base64 {
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ input: some Collection<UInt8>) -> String {
        let bytes = Array(input)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            i += 3
        }
        switch bytes.count - i {
        case 1:
            let n = UInt32(bytes[i]) << 16
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], UInt8(ascii: "="), UInt8(ascii: "=")]
        case 2:
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], UInt8(ascii: "=")]
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Strict decoding: canonical padding required, nothing outside the alphabet,
    /// unused low bits zero. Nil for anything else.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        var i = 0
        while i < chars.count {
            let last = i + 4 == chars.count
            let padding = last ? (chars[i + 3] == UInt8(ascii: "=") ? (chars[i + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
            var n: UInt32 = 0
            for j in 0 ..< 4 {
                if j >= 4 - padding {
                    n <<= 6
                    continue
                }
                guard let v = value(chars[i + j]) else { return nil }
                n = n << 6 | UInt32(v)
            }
            out.append(UInt8(n >> 16))
            if padding < 2 { out.append(UInt8(n >> 8 & 0xff)) } else if n & 0xffff != 0 { return nil }
            if padding < 1 { out.append(UInt8(n & 0xff)) } else if n & 0xff != 0 { return nil }
            i += 4
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A") ... UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a") ... UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
