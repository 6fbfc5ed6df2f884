public import HTTP

/// A header list that [Header Rewrite] changes in place, names compared
/// without case: Rules' own `[HeaderField]` (`sluice match`, sniffed
/// requests) and the `HTTPHeaders` of a head in HTTP mode, which would
/// otherwise be copied into the first and back for every request.
public protocol RewritableHeaders {
    mutating func appendField(name: String, value: String)
    mutating func updateValues(of name: String, _ transform: (String) -> String)
    mutating func removeFields(named name: String)
}

extension [HeaderField]: RewritableHeaders {
    public mutating func appendField(name: String, value: String) { append(HeaderField(name: name, value: value)) }

    public mutating func updateValues(of name: String, _ transform: (String) -> String) {
        for i in indices where HTTPHeader.namesEqual(self[i].name, name) { self[i].value = transform(self[i].value) }
    }

    public mutating func removeFields(named name: String) {
        // Looked for first: removeAll copies a list it shares even when nothing goes.
        guard contains(where: { HTTPHeader.namesEqual($0.name, name) }) else { return }
        removeAll { HTTPHeader.namesEqual($0.name, name) }
    }
}

extension HTTPHeaders: RewritableHeaders {
    public mutating func appendField(name: String, value: String) { add(name: name, value: value) }

    public mutating func removeFields(named name: String) { remove(name: name) }
}
