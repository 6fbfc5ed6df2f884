/// What a server accepted of permessage-deflate (RFC 7692 §7), from its
/// 101's `Sec-WebSocket-Extensions`: how each direction's messages are
/// compressed, so that a record of them can inflate them.
public struct WebSocketDeflateParameters: Sendable, Equatable {
    /// §7.1.1.1: the server starts each message's compression afresh.
    public var serverNoContextTakeover = false
    /// §7.1.1.2: the client does.
    public var clientNoContextTakeover = false
    /// §7.1.2.1: the server's window (its messages' back-references).
    public var serverMaxWindowBits = 15
    /// §7.1.2.2: the client's window.
    public var clientMaxWindowBits = 15

    public init() {}

    /// The first permessage-deflate among `fields` (each a header value:
    /// extensions separated by commas, parameters by semicolons), or nil
    /// when the server accepted none, or one with a parameter out of range.
    public init?(acceptedExtensions fields: [String]) {
        for field in fields {
            for offer in field.split(separator: ",") {
                let parts = offer.split(separator: ";").map { $0.withoutOptionalWhitespace }
                guard let name = parts.first, name.lowercased() == "permessage-deflate" else { continue }
                var parameters = WebSocketDeflateParameters()
                for setting in parts.dropFirst() {
                    let pair = setting.split(separator: "=", maxSplits: 1).map { $0.withoutOptionalWhitespace }
                    let key = pair[0].lowercased()
                    var value = pair.count > 1 ? pair[1] : nil
                    if let quoted = value, quoted.count >= 2, quoted.hasPrefix("\""), quoted.hasSuffix("\"") {
                        value = String(quoted.dropFirst().dropLast())
                    }
                    switch key {
                    case "server_no_context_takeover": parameters.serverNoContextTakeover = true
                    case "client_no_context_takeover": parameters.clientNoContextTakeover = true
                    case "server_max_window_bits", "client_max_window_bits":
                        // §7.1.2: 8 to 15; a response's client_max_window_bits has a value.
                        guard let text = value, let bits = Int(text), (8 ... 15).contains(bits) else {
                            if key == "client_max_window_bits", value == nil { continue }
                            return nil
                        }
                        if key == "server_max_window_bits" { parameters.serverMaxWindowBits = bits } else { parameters.clientMaxWindowBits = bits }
                    default:
                        // §7: an unknown parameter makes the response invalid; the record does not guess.
                        return nil
                    }
                }
                self = parameters
                return
            }
        }
        return nil
    }
}

extension Substring {
    /// Without spaces and tabs at either end (RFC 9110 §5.6.3's OWS).
    fileprivate var withoutOptionalWhitespace: String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
