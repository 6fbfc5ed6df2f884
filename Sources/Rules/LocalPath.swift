/// Joins a request-derived relative path onto a Map Local directory without
/// ever leaving it. The relative part comes from the URL, so it is hostile by
/// default: it is percent-decoded once (a second layer of escapes stays
/// literal and so stays harmless), then refused if any segment is `..`, if it
/// is absolute, or if it holds a NUL, a control character or a backslash.
/// `.` and empty segments are dropped.
///
/// Pure text: a symbolic link inside the directory can still point outside.
/// The engine opens the result with O_NOFOLLOW semantics where that matters.
public enum LocalPath {
    public static func resolve(directory: String, relative: String) -> String? {
        guard let decoded = percentDecode(relative) else { return nil }
        guard let first = decoded.first, first != UInt8(ascii: "/") else { return nil }
        for byte in decoded where byte < 0x20 || byte == 0x7f || byte == UInt8(ascii: "\\") { return nil }
        var kept: [ArraySlice<UInt8>] = []
        for segment in decoded.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            if segment.elementsEqual([UInt8(ascii: ".")]) { continue }
            if segment.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) { return nil }
            kept.append(segment)
        }
        guard !kept.isEmpty else { return nil }
        var joined: [UInt8] = []
        for segment in kept {
            if !joined.isEmpty { joined.append(UInt8(ascii: "/")) }
            joined.append(contentsOf: segment)
        }
        // Decoded bytes must still be UTF-8: a path the file system would see
        // differently from the one logged is a trap.
        guard let tail = String(validating: joined, as: UTF8.self) else { return nil }
        guard !directory.isEmpty, !directory.utf8.contains(0) else { return nil }
        var base = directory
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        return base == "/" ? "/" + tail : base + "/" + tail
    }

    /// Nil for a broken escape ("%", "%4", "%zz").
    static func percentDecode(_ text: String) -> [UInt8]? {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%") {
                guard i + 2 < bytes.count,
                      let h = hexValue(bytes[i + 1]), let l = hexValue(bytes[i + 2]) else { return nil }
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
