import Wire

/// [Rule]: `TYPE,VALUE,POLICY[,OPTIONS]`, first match wins, FINAL last.
extension ProfileBuilder {
    static let ruleTypes = ["DOMAIN", "DOMAIN-SUFFIX", "DOMAIN-KEYWORD", "DOMAIN-REGEX", "DOMAIN-WILDCARD", "IP-CIDR", "IP-CIDR6", "GEOIP", "IP-ASN",
                            "DEST-PORT", "DST-PORT", "SRC-PORT", "SRC-IP", "PROTOCOL", "URL-REGEX", "METHOD", "HEADER",
                            "USER-AGENT", "PROCESS-NAME", "PROCESS-PATH", "UID", "AND", "OR", "NOT", "RULE-SET", "DOMAIN-SET", "FINAL", "MATCH"]
    /// Surge rule types that need data Sluice does not have.
    static let foreignRuleTypes: [String: String] = [
        "IN-PORT": "Sluice has no inbound proxy ports",
        "SUBNET": "Sluice has no network-dependent rules",
        "CELLULAR-RADIO": "Sluice has no network-dependent rules",
        "DEVICE-NAME": "Sluice has no device rules",
        "SCRIPT": "Sluice runs no scripts",
    ]
    /// How deep AND/OR/NOT may nest: far beyond what anyone writes, short of a stack overflow.
    static let maximumNesting = 16

    mutating func readRule(_ line: ProfileLexer.Line) {
        let n = line.number
        let fields: [ProfileLexer.Field]
        switch ProfileLexer.commaFields(line.text, column: line.column) {
        case let .success(list): fields = list
        case let .failure(failure): report(failure, line: n); return
        }
        if let finalRule {
            error(n, line.column, "rule after FINAL can never match", hint: "move it above \(finalRule) at line \(finalRule.line)")
            return
        }
        guard let typeField = fields.first else { return }
        let type = typeField.text.uppercased()
        if type == "FINAL" || type == "MATCH" {
            guard fields.count >= 2, !fields[1].text.isEmpty else {
                error(n, typeField.column, "FINAL needs a policy", hint: "write FINAL,DIRECT (or the policy for everything else)")
                return
            }
            // Surge's dns-failed (FINAL's policy also when a lookup fails) holds
            // already: Sluice never resolves to decide a rule.
            if fields.count == 3, fields[2].text.lowercased() == "dns-failed" {
                usePolicy(fields[1].text, line: n, column: fields[1].column, context: "FINAL")
                finalRule = FinalRule(policy: fields[1].text, line: n)
                return
            }
            if fields.count > 2 {
                let hint = fields[2].text.lowercased() == "capture"
                    ? "capture everything by leaving capture off every rule; to keep all but some flows, give those rules their own policy line above"
                    : "write FINAL,\(fields[1].text)"
                error(n, fields[2].column, "FINAL takes only a policy, got '\(fields[2].text)'", hint: hint)
                return
            }
            usePolicy(fields[1].text, line: n, column: fields[1].column, context: "FINAL")
            finalRule = FinalRule(policy: fields[1].text, line: n)
            return
        }
        guard Self.ruleTypes.contains(type) else {
            reportUnknownRuleType(typeField, line: n)
            return
        }
        guard fields.count >= 3, !fields[2].text.isEmpty else {
            let value = fields.count >= 2 ? fields[1].text : "VALUE"
            error(n, fields.last.map { $0.column + $0.raw.count } ?? line.column, "rule \(type) has no policy",
                  hint: "write \(type),\(value),POLICY, e.g. \(type),\(value),DIRECT")
            return
        }
        var optionFields = Array(fields.dropFirst(3))
        // Surge's pre-matching (a REJECT rule decided before anything is
        // fetched) is how Sluice decides rules anyway: accepted, nothing to do.
        optionFields.removeAll { $0.text.lowercased() == "pre-matching" }
        // RULE-SET,SYSTEM: Apple's own services, which a Linux host never asks for.
        if type == "RULE-SET", fields[1].text == "SYSTEM" {
            warning(n, fields[1].column, "RULE-SET,SYSTEM is Surge's list of Apple's own system services; the line is skipped",
                    hint: "remove the line; Linux has no such set (LAN is built in)")
            return
        }
        var extendedMatching = false
        if let index = optionFields.firstIndex(where: { $0.text.lowercased() == "extended-matching" }) {
            guard type.hasPrefix("DOMAIN") || type == "RULE-SET" else {
                error(n, optionFields[index].column, "extended-matching applies only to DOMAIN rules and rule sets",
                      hint: "remove it; Sluice's domain rules always see SNI and Host")
                return
            }
            extendedMatching = true
            optionFields.remove(at: index)
        }
        // `capture` (ext): this rule's flows are the ones the capture keeps.
        var capture = false
        if let index = optionFields.firstIndex(where: { $0.text.lowercased() == "capture" }) {
            capture = true
            optionFields.remove(at: index)
        }
        guard let condition = condition(type: type, typeField: typeField, value: fields[1], options: optionFields, line: n, depth: 0) else { return }
        usePolicy(fields[2].text, line: n, column: fields[2].column, context: "rule \(type),\(fields[1].text)")
        rules.append(RuleDefinition(line: n, condition: condition, policy: fields[2].text,
                                    options: RuleOptions(extendedMatching: extendedMatching, capture: capture)))
    }

    mutating func reportUnknownRuleType(_ field: ProfileLexer.Field, line: Int) {
        let type = field.text.uppercased()
        if let reason = Self.foreignRuleTypes[type] {
            error(line, field.column, "rule type \(type) is not supported", hint: reason)
        } else if field.text.isEmpty {
            error(line, field.column, "rule has no type", hint: "write TYPE,VALUE,POLICY, e.g. DOMAIN-SUFFIX,ads.test,REJECT")
        } else {
            error(line, field.column, "unknown rule type '\(field.text)'", hint: Suggestion.hint(for: type, in: Self.ruleTypes))
        }
    }

    /// The condition of one rule or sub-rule; nil when reported.
    mutating func condition(type: String, typeField: ProfileLexer.Field, value valueField: ProfileLexer.Field,
                            options: [ProfileLexer.Field], line n: Int, depth: Int) -> RuleCondition? {
        let value = valueField.text
        let column = valueField.column
        var noResolve = false
        for option in options {
            let text = option.text.lowercased()
            if text == "no-resolve", type == "IP-CIDR" || type == "IP-CIDR6" || type == "GEOIP" || type == "IP-ASN" || type == "RULE-SET" {
                noResolve = true
            } else if text == "no-resolve" {
                error(n, option.column, "no-resolve applies only to IP-CIDR, IP-CIDR6, GEOIP, IP-ASN and RULE-SET", hint: "remove it from this \(type) rule")
                return nil
            } else {
                let known = (type.hasPrefix("IP-CIDR") || type == "GEOIP" || type == "IP-ASN" ? ["no-resolve"] : type.hasPrefix("DOMAIN") ? ["extended-matching"]
                    : type == "RULE-SET" ? ["no-resolve", "extended-matching"] : []) + ["capture"]
                error(n, option.column, "unknown rule option '\(option.text)'", hint: Suggestion.hint(for: text, in: known))
                return nil
            }
        }
        if value.isEmpty, type != "AND", type != "OR", type != "NOT" {
            error(n, column, "\(type) needs a value", hint: "write \(type),VALUE,POLICY")
            return nil
        }
        switch type {
        case "DOMAIN", "DOMAIN-SUFFIX":
            var name = value.lowercased()
            if type == "DOMAIN-SUFFIX", name.hasPrefix(".") { name.removeFirst() }
            if name.hasSuffix(".") { name.removeLast() }
            guard Self.isHostName(name, wildcard: false) else {
                error(n, column, "'\(value)' is not a domain name",
                      hint: value.contains("/") || value.contains(":") ? "\(type) takes a bare name like api.test; match URLs with URL-REGEX" : "use letters, digits, '-' and dots, like api.test")
                return nil
            }
            return type == "DOMAIN" ? .domain(name) : .domainSuffix(name)
        case "DOMAIN-KEYWORD":
            return .domainKeyword(value.lowercased())
        case "DOMAIN-REGEX":
            return regex(value, line: n, column: column).map(RuleCondition.domainRegex)
        case "DOMAIN-WILDCARD":
            return domainWildcard(value, line: n, column: column)
        case "URL-REGEX":
            return regex(value, line: n, column: column).map(RuleCondition.urlRegex)
        case "IP-CIDR":
            return cidr4(value, line: n, column: column, what: "IP-CIDR").map { .ipCIDR($0, noResolve: noResolve) }
        case "IP-CIDR6":
            return cidr6(value, line: n, column: column, what: "IP-CIDR6").map { .ipCIDR6($0, noResolve: noResolve) }
        case "GEOIP":
            return geoIP(value, line: n, column: column, noResolve: noResolve)
        case "IP-ASN":
            return ipASN(value, line: n, column: column, noResolve: noResolve)
        case "DEST-PORT", "DST-PORT":
            return portRange(value, line: n, column: column).map(RuleCondition.destinationPort)
        case "SRC-PORT":
            return portRange(value, line: n, column: column).map(RuleCondition.sourcePort)
        case "SRC-IP":
            // One address (Surge's usual form) or a network.
            if let address = IPAddress(value) {
                switch address {
                case let .v4(a): return IPv4Prefix(network: a, length: 32).map { .sourceIP(.v4($0)) }
                case let .v6(a): return IPv6Prefix(network: a, length: 128).map { .sourceIP(.v6($0)) }
                }
            }
            if value.contains(":") { return cidr6(value, line: n, column: column, what: "SRC-IP").map { .sourceIP(.v6($0)) } }
            return cidr4(value, line: n, column: column, what: "SRC-IP").map { .sourceIP(.v4($0)) }
        case "PROTOCOL":
            let upper = value.uppercased()
            if let value = RuleProtocol(rawValue: upper == "HTTPS" ? "TLS" : upper) { return .protocol(value) }
            error(n, column, "unknown protocol '\(value)'", hint: Suggestion.hint(for: upper, in: RuleProtocol.allCases.map(\.rawValue)))
            return nil
        case "METHOD":
            guard Self.isToken(value) else {
                error(n, column, "'\(value)' is not an HTTP method", hint: "write a method such as GET, POST or PUT")
                return nil
            }
            return .method(value.uppercased())
        case "HEADER":
            guard let colon = value.firstIndex(of: ":") else {
                error(n, column, "HEADER value '\(value)' has no ':'", hint: "write HEADER,\"NAME: REGEX\",POLICY, e.g. HEADER,\"X-Route: ^canary$\",DIRECT")
                return nil
            }
            let name = String(value[..<colon].trimmingBlanks())
            guard Self.isToken(name) else {
                error(n, column, "'\(name)' is not a header name", hint: "header names are letters, digits and -, e.g. X-Route")
                return nil
            }
            let pattern = String(Substring(value[value.index(after: colon)...]).trimmingBlanks())
            return regex(pattern, line: n, column: column).map { .header(name: name, value: $0) }
        case "USER-AGENT":
            return .userAgent(GlobPattern(value))
        case "PROCESS-NAME":
            if value.contains("/") {
                let name = value.split(separator: "/").last.map(String.init) ?? value
                error(n, column, "PROCESS-NAME takes a program's file name, not a path",
                      hint: "write PROCESS-NAME,\(name), or PROCESS-PATH,\(value) for the full path")
                return nil
            }
            return .owner(.processName(GlobPattern(value)))
        case "PROCESS-PATH":
            guard value.hasPrefix("/") || value.hasPrefix("*") else {
                error(n, column, "PROCESS-PATH takes the program's absolute path",
                      hint: "write PROCESS-PATH,/usr/bin/\(value), or PROCESS-NAME,\(value) for the file name alone")
                return nil
            }
            return .owner(.processPath(GlobPattern(value)))
        case "UID":
            return userIDRange(value, line: n, column: column).map { .owner(.userID($0)) }
        case "AND", "OR", "NOT":
            return composite(type: type, value: valueField, line: n, depth: depth)
        case "RULE-SET", "DOMAIN-SET":
            return ruleSet(type == "RULE-SET" ? .rules : .domains, valueField, line: n).map { .ruleSet($0, noResolve: noResolve) }
        default:
            reportUnknownRuleType(typeField, line: n)
            return nil
        }
    }

    /// UID's value: a number or a range `LOW-HIGH`.
    mutating func userIDRange(_ value: String, line n: Int, column: Int) -> ClosedRange<UInt32>? {
        let bounds = value.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { UInt32($0.trimmingBlanks()) }
        if bounds.count == 1, let single = bounds[0] { return single ... single }
        if bounds.count == 2, let low = bounds[0], let high = bounds[1] {
            guard low <= high else {
                error(n, column, "UID range \(value) is empty", hint: "write the lower number first: UID,\(high)-\(low)")
                return nil
            }
            return low ... high
        }
        let isName = value.unicodeScalars.contains { ("a"..."z").contains($0) || ("A"..."Z").contains($0) }
        error(n, column, "'\(value)' is not a user id",
              hint: isName ? "UID takes a number: `id -u \(value)` prints it" : "write a number like 1000, or a range like 1000-1999")
        return nil
    }

    /// `((TYPE,VALUE),(TYPE,VALUE)...)`: the sub-rules of AND, OR and NOT.
    mutating func composite(type: String, value field: ProfileLexer.Field, line n: Int, depth: Int) -> RuleCondition? {
        let example = type == "NOT" ? "NOT,((DOMAIN,api.test)),DIRECT" : "\(type),((METHOD,POST),(DOMAIN,upload.test)),DIRECT"
        guard depth < Self.maximumNesting else {
            error(n, field.column, "rules nest more than \(Self.maximumNesting) deep", hint: "flatten the AND/OR/NOT rule")
            return nil
        }
        let raw = field.raw
        guard raw.hasPrefix("("), raw.hasSuffix(")"), raw.count >= 2 else {
            error(n, field.column, "\(type) needs its sub-rules in parentheses", hint: "write \(example)")
            return nil
        }
        let inner = raw.dropFirst().dropLast()
        let items: [ProfileLexer.Field]
        switch ProfileLexer.commaFields(inner, column: field.column + 1) {
        case let .success(list): items = list
        case let .failure(failure): report(failure, line: n); return nil
        }
        var conditions: [RuleCondition] = []
        var ok = true
        for item in items {
            guard item.raw.hasPrefix("("), item.raw.hasSuffix(")"), item.raw.count >= 2 else {
                // The structure is wrong: reporting each piece of it again would be noise.
                error(n, item.column, "sub-rule '\(item.raw)' is not in parentheses", hint: "write \(example)")
                return nil
            }
            let parts: [ProfileLexer.Field]
            switch ProfileLexer.commaFields(item.raw.dropFirst().dropLast(), column: item.column + 1) {
            case let .success(list): parts = list
            case let .failure(failure): report(failure, line: n); ok = false; continue
            }
            guard let typeField = parts.first, parts.count >= 2 else {
                error(n, item.column, "sub-rule '\(item.raw)' needs a type and a value", hint: "write \(example)")
                ok = false; continue
            }
            let subType = typeField.text.uppercased()
            guard Self.ruleTypes.contains(subType), subType != "FINAL", subType != "MATCH" else {
                if subType == "FINAL" || subType == "MATCH" {
                    error(n, typeField.column, "FINAL cannot be a sub-rule", hint: "FINAL stands alone at the end of [Rule]")
                } else {
                    reportUnknownRuleType(typeField, line: n)
                }
                ok = false; continue
            }
            if let sub = condition(type: subType, typeField: typeField, value: parts[1], options: Array(parts.dropFirst(2)), line: n, depth: depth + 1) {
                conditions.append(sub)
            } else {
                ok = false
            }
        }
        guard ok else { return nil }
        if type == "NOT" {
            guard conditions.count == 1 else {
                error(n, field.column, "NOT takes exactly one sub-rule, got \(conditions.count)", hint: "write \(example)")
                return nil
            }
            return .not(conditions[0])
        }
        guard !conditions.isEmpty else {
            error(n, field.column, "\(type) has no sub-rules", hint: "write \(example)")
            return nil
        }
        return type == "AND" ? .and(conditions) : .or(conditions)
    }

    /// GEOIP,CC: a two-letter country code, looked up in [General]'s geoip-database.
    mutating func geoIP(_ value: String, line n: Int, column: Int, noResolve: Bool) -> RuleCondition? {
        let code = value.uppercased()
        guard code.utf8.count == 2, code.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else {
            error(n, column, "GEOIP takes a two-letter country code, got '\(value)'", hint: "write an ISO 3166-1 code, e.g. GEOIP,NL,DIRECT")
            return nil
        }
        guard let database = required(geoIP, named: general.geoIPDatabase, by: "GEOIP", what: "a GeoIP database",
                                      key: "geoip-database", example: "GeoLite2-Country.mmdb", line: n, column: column) else { return nil }
        return .geoIP(country: code, database: database, noResolve: noResolve)
    }

    /// IP-ASN,N: an autonomous system number (AS13335 is read as 13335),
    /// looked up in [General]'s asn-database.
    mutating func ipASN(_ value: String, line n: Int, column: Int, noResolve: Bool) -> RuleCondition? {
        let digits = value.uppercased().hasPrefix("AS") ? String(value.dropFirst(2)) : value
        guard !digits.isEmpty, digits.utf8.count <= 10, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let number = UInt32(digits) else {
            error(n, column, "IP-ASN takes an autonomous system number, got '\(value)'", hint: "write the number, e.g. IP-ASN,13335,DIRECT")
            return nil
        }
        guard let database = required(asn, named: general.asnDatabase, by: "IP-ASN", what: "an ASN database",
                                      key: "asn-database", example: "GeoLite2-ASN.mmdb", line: n, column: column) else { return nil }
        return .ipASN(number: number, database: database, noResolve: noResolve)
    }

    /// The database a GEOIP or IP-ASN line needs; nil (reported) without one.
    /// A database named but unreadable was reported at its own line, once.
    mutating func required(_ database: MaxMindDatabase?, named path: String?, by type: String, what: String,
                           key: String, example: String, line n: Int, column: Int) -> MaxMindDatabase? {
        if let database { return database }
        guard path == nil else { return nil }
        error(n, column, "\(type) needs \(what)",
              hint: "set \(key) = \(example) in [General] (a MaxMind DB file); or list the networks in a RULE-SET file")
        return nil
    }

    /// DOMAIN-WILDCARD's glob, checked and compiled as its regex.
    mutating func domainWildcard(_ pattern: String, line n: Int, column: Int) -> RuleCondition? {
        let hint = "* matches any run (dots too), ? one character, [a-z] or [!0-9] a class: api-*.example.test"
        guard let source = GlobPattern.domainRegexSource(pattern) else {
            error(n, column, "'\(pattern)' has a [ without its ]", hint: hint)
            return nil
        }
        guard !pattern.contains("/"), !pattern.contains(":") else {
            error(n, column, "'\(pattern)' is not a name pattern", hint: "DOMAIN-WILDCARD matches names; match URLs with URL-REGEX")
            return nil
        }
        guard let compiled = try? CompiledRegex(source) else {
            error(n, column, "'\(pattern)' is not a wildcard pattern Sluice can read", hint: hint)
            return nil
        }
        return .domainWildcard(pattern: pattern, regex: compiled)
    }

    /// "443", "8000-8100", ">=50000", ">1023", "<1024", "<=1023".
    mutating func portRange(_ text: String, line: Int, column: Int) -> PortRange? {
        func port(_ s: Substring) -> Int? {
            guard !s.isEmpty, s.count <= 5, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let v = Int(s), v <= 65535 else { return nil }
            return v
        }
        let bad = { (self: inout ProfileBuilder) in
            self.error(line, column, "bad port '\(text)'", hint: "write a port (443), a range (8000-8100) or a comparison (>=50000, <1024), each 0 to 65535")
        }
        let s = Substring(text)
        for (op, offset) in [(">=", 0), ("<=", 0), (">", 1), ("<", -1)] where s.hasPrefix(op) {
            guard let v = port(s.dropFirst(op.count)) else { bad(&self); return nil }
            let bound = v + offset
            guard (0 ... 65535).contains(bound) else {
                error(line, column, "port comparison '\(text)' matches no port", hint: "ports are 0 to 65535")
                return nil
            }
            return op.hasPrefix(">") ? PortRange(UInt16(bound), 65535) : PortRange(0, UInt16(bound))
        }
        let parts = s.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard let low = port(parts[0]) else { bad(&self); return nil }
        guard parts.count == 2 else { return PortRange(UInt16(low)) }
        guard let high = port(parts[1]) else { bad(&self); return nil }
        guard low <= high else {
            error(line, column, "port range '\(text)' is backwards", hint: "write \(high)-\(low)")
            return nil
        }
        return PortRange(UInt16(low), UInt16(high))
    }
}
