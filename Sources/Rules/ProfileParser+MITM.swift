import Wire

/// [MITM]: `key = value` lines in Surge's words, saying which HTTPS flows are
/// decrypted (`hostname`) and how.
extension ProfileBuilder {
    static let mitmKeys = ["hostname", "skip-server-cert-verify", "auto-quic-block", "h2"]
    /// Surge's [MITM] keys Sluice has no use for, and why: a pasted Surge
    /// profile loads, each of these said once as a warning.
    static let surgeOnlyMITMKeys: [String: String] = [
        "ca-passphrase": "Sluice keeps its own CA: run `sluice ca`",
        "ca-p12": "Sluice keeps its own CA: run `sluice ca`",
        "tcp-connection": "Sluice intercepts HTTPS only",
        "hostname-disabled": "it lists the names switched off in Surge's app, which has no use here; exclude a name with -NAME in hostname",
        "client-source-address": "Sluice intercepts the names in hostname for every client",
    ]

    mutating func readMITM(_ line: ProfileLexer.Line) {
        guard let (key, keyColumn, raw, column) = keyValueLine(line, example: "hostname = *.example.test, -pay.example.test") else { return }
        if let reason = Self.surgeOnlyMITMKeys[key] {
            surgeOnly(key, line: line.number, column: keyColumn, reason: reason)
            return
        }
        guard Self.mitmKeys.contains(key) else {
            error(line.number, keyColumn, "unknown key '\(key)' in [MITM]", hint: Suggestion.hint(for: key, in: Self.mitmKeys))
            return
        }
        let n = line.number
        switch key {
        case "hostname":
            // Said here rather than by firstTime: two lines are usually a list split in two.
            if let first = mitm.line {
                error(n, keyColumn, "'hostname' is set twice in [MITM] (first at line \(first))",
                      hint: "put all names on one line, separated by commas")
                return
            }
            mitm.line = n
            readMITMHostnames(raw, line: n, column: column)
        case "skip-server-cert-verify":
            guard firstTime(key, section: .mitm, line: n, column: keyColumn) else { return }
            let value = ProfileLexer.unquote(raw)
            if let on = boolean(value, what: key, line: n, column: column) { mitm.skipServerCertificateVerification = on }
        case "auto-quic-block":
            guard firstTime(key, section: .mitm, line: n, column: keyColumn) else { return }
            let value = ProfileLexer.unquote(raw)
            if let on = boolean(value, what: key, line: n, column: column) { mitm.blocksQUIC = on }
        case "h2":
            guard firstTime(key, section: .mitm, line: n, column: keyColumn) else { return }
            let value = ProfileLexer.unquote(raw)
            if let on = boolean(value, what: key, line: n, column: column) { mitm.prefersHTTP2 = on }
        default:
            break
        }
    }

    mutating func readMITMHostnames(_ raw: Substring, line: Int, column: Int) {
        var value = raw
        var column = column
        // Surge's modules say how their list joins the profile's; here there is one list.
        for marker in ["%APPEND%", "%INSERT%"] where value.hasPrefix(marker) {
            value = value.dropFirst(marker.count)
            column += marker.count
            while let first = value.first, ProfileLexer.isBlank(first) { value.removeFirst(); column += 1 }
            break
        }
        let fields: [ProfileLexer.Field]
        switch ProfileLexer.commaFields(value, column: column) {
        case let .success(list): fields = list
        case let .failure(failure): report(failure, line: line); return
        }
        let endColumn = column + value.count
        for field in fields {
            guard !field.raw.isEmpty else {
                // A trailing comma: point at it rather than past the line's end.
                error(line, field.column < endColumn ? field.column : field.column - 1, "hostname has an empty item", hint: "remove the extra comma; patterns are separated by single commas")
                continue
            }
            let text = field.isQuoted ? Substring(field.text) : field.raw
            if let pattern = mitmHostPattern(text, line: line, column: field.column + (field.isQuoted ? 1 : 0)) {
                mitm.hostnames.append(pattern)
            }
        }
    }

    /// One item: `[-]HOST[:PORT]`, HOST a name, an IPv4 address or a bracketed
    /// IPv6 address, with `*` and `?` wildcards; nil (reported) when it is not one.
    mutating func mitmHostPattern(_ text: Substring, line: Int, column: Int) -> MITMHostPattern? {
        let shape = "a pattern is a name or an address, * for any run of characters and ? for one, "
            + "-PATTERN to exclude, :PORT for a port other than 443 (:0 for every port)"
        var offset = 0
        for c in text {
            defer { offset += 1 }
            guard let ascii = c.asciiValue, Self.isHostPatternByte(ascii) else {
                if ProfileLexer.isBlank(c) {
                    error(line, column + offset, "hostname pattern '\(text)' contains a blank", hint: "separate patterns with commas")
                } else {
                    error(line, column + offset, "hostname pattern '\(text)' contains '\(c)'",
                          hint: c.isASCII ? shape : "write an international name in its ASCII (xn--) form")
                }
                return nil
            }
        }
        // Every character is ASCII now, so a byte offset is a column offset.
        func columnOf(_ index: Substring.Index) -> Int { column + text.utf8.distance(from: text.startIndex, to: index) }
        var rest = text
        let excludes = rest.hasPrefix("-")
        if excludes { rest.removeFirst() }
        var host: Substring
        var portText: Substring?
        let bracketed = rest.hasPrefix("[")
        if bracketed {
            guard let close = rest.firstIndex(of: "]") else {
                error(line, columnOf(rest.startIndex), "'[' in hostname pattern '\(text)' is not closed", hint: "write [ADDRESS] or [ADDRESS]:PORT, e.g. [fd00::1]:8443")
                return nil
            }
            host = rest[rest.index(after: rest.startIndex) ..< close]
            let after = rest[rest.index(after: close)...]
            if let first = after.first {
                guard first == ":" else {
                    error(line, columnOf(after.startIndex), "text after ']' in hostname pattern '\(text)'", hint: "write [ADDRESS]:PORT, e.g. [fd00::1]:8443")
                    return nil
                }
                portText = after.dropFirst()
            }
            let isAddressText = host.utf8.allSatisfy { $0.isHexDigit || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "*") || $0 == UInt8(ascii: "?") }
            let hasWildcard = host.contains("*") || host.contains("?")
            guard isAddressText, host.contains(":") || hasWildcard, hasWildcard || IPv6Address(host) != nil else {
                error(line, columnOf(rest.startIndex), "'[\(host)]' in hostname is not an IPv6 address",
                      hint: "brackets are for IPv6 addresses, such as [fd00::1]; write names without them")
                return nil
            }
        } else if let colon = rest.firstIndex(of: ":") {
            if rest[rest.index(after: colon)...].contains(":") {
                error(line, columnOf(rest.startIndex), "IPv6 address '\(rest)' in hostname needs brackets",
                      hint: "write [ADDRESS] for port 443, or [ADDRESS]:PORT, e.g. [fd00::1]:8443")
                return nil
            }
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        var port: UInt16? = 443
        if let portText {
            guard !portText.isEmpty, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = UInt16(portText) else {
                error(line, columnOf(portText.startIndex), "port '\(portText)' in hostname pattern '\(text)' is not a number from 0 to 65535",
                      hint: "write NAME:PORT, e.g. api.example.test:8443; :0 is every port")
                return nil
            }
            // Surge's spelling of every port.
            port = number == 0 ? nil : number
        }
        if !bracketed, host.hasSuffix(".") { host.removeLast() }
        guard !host.isEmpty else {
            error(line, column, "hostname pattern '\(text)' names no host",
                  hint: excludes ? "write -NAME to exclude a name, e.g. -pay.example.test" : "write a name or an address, e.g. api.example.test or *.example.test")
            return nil
        }
        if !bracketed {
            if host.hasPrefix(".") {
                error(line, columnOf(host.startIndex), "hostname pattern '\(text)' starts with a dot",
                      hint: "write *\(host) for the names under \(host.dropFirst()), and \(host.dropFirst()) for itself")
                return nil
            }
            if let dots = host.firstRange(of: "..") {
                error(line, columnOf(dots.lowerBound), "hostname pattern '\(text)' has an empty label",
                      hint: "write names such as api.example.test or *.example.test")
                return nil
            }
        }
        return MITMHostPattern(host: String(host), port: port, excludes: excludes)
    }

    /// Letters, digits and '-', '_', '.', the wildcards, and ':' '[' ']' for ports and IPv6.
    static func isHostPatternByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || "-_.*?:[]".utf8.contains(c)
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (self >= 0x30 && self <= 0x39) || (self >= 0x41 && self <= 0x46) || (self >= 0x61 && self <= 0x66)
    }
}
