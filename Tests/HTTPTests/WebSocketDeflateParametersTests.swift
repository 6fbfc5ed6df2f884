import Testing
@testable import HTTP

/// RFC 7692 §7: what a server's 101 accepted of permessage-deflate.
@Suite struct WebSocketDeflateParametersTests {
    @Test func theAcceptedParameters() {
        #expect(WebSocketDeflateParameters(acceptedExtensions: ["permessage-deflate"]) == WebSocketDeflateParameters())
        let parsed = WebSocketDeflateParameters(acceptedExtensions: [
            "x-webkit-unknown, Permessage-Deflate ; server_no_context_takeover; client_max_window_bits=\"10\";server_max_window_bits=9",
        ])
        var expected = WebSocketDeflateParameters()
        expected.serverNoContextTakeover = true
        expected.clientMaxWindowBits = 10
        expected.serverMaxWindowBits = 9
        #expect(parsed == expected)
        var clientOnly = WebSocketDeflateParameters()
        clientOnly.clientNoContextTakeover = true
        #expect(WebSocketDeflateParameters(acceptedExtensions: ["foo", "permessage-deflate; client_no_context_takeover"]) == clientOnly)
    }

    @Test func noneOrInvalid() {
        #expect(WebSocketDeflateParameters(acceptedExtensions: []) == nil)
        #expect(WebSocketDeflateParameters(acceptedExtensions: ["x-other; a=1"]) == nil)
        #expect(WebSocketDeflateParameters(acceptedExtensions: ["permessage-deflate; server_max_window_bits=16"]) == nil)
        #expect(WebSocketDeflateParameters(acceptedExtensions: ["permessage-deflate; server_max_window_bits"]) == nil)
        #expect(WebSocketDeflateParameters(acceptedExtensions: ["permessage-deflate; mystery"]) == nil)
    }
}
