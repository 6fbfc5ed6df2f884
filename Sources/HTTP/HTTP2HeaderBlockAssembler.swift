/// §6.10: a header block comes as a HEADERS frame and the CONTINUATIONs
/// after it, and nothing else may come between them on the connection.
/// Both ends of Sluice's HTTP/2 assemble blocks here: the gateway (the
/// app's frames) and the client session (an origin's).
struct HTTP2HeaderBlockAssembler: Sendable {
    typealias Block = (streamID: UInt32, endStream: Bool, block: [UInt8])

    /// A larger block is refused (ENHANCE_YOUR_CALM).
    let maximum: Int
    /// Who sent the frames, for the errors' text ("the origin sent ").
    let sender: String
    /// The block still waiting for END_HEADERS.
    private var open: Block?

    init(maximum: Int, sender: String = "") {
        self.maximum = maximum
        self.sender = sender
    }

    /// While a block is open, only its CONTINUATIONs may come.
    func admit(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) {
        guard let open else { return }
        guard frame.knownType == .continuation, frame.streamID == open.streamID else {
            throw HTTP2ConnectionError(.protocolError, "\(sender)\(frame) inside the header block of stream \(open.streamID)")
        }
    }

    /// A HEADERS frame's fragment (padding and priority removed): the whole
    /// block when END_HEADERS is set, else nil until its CONTINUATIONs end it.
    mutating func headers(streamID: UInt32, endStream: Bool, endHeaders: Bool, fragment: ArraySlice<UInt8>) throws(HTTP2ConnectionError) -> Block? {
        if endHeaders { return (streamID, endStream, Array(fragment)) }
        try check(fragment.count)
        open = (streamID, endStream, Array(fragment))
        return nil
    }

    /// A CONTINUATION: the whole block once it has END_HEADERS.
    mutating func continuation(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) -> Block? {
        guard var block = open else { throw HTTP2ConnectionError(.protocolError, "\(sender)a CONTINUATION with no header block open") }
        block.block += frame.payload
        try check(block.block.count)
        guard frame.has(HTTP2Flags.endHeaders) else {
            open = block
            return nil
        }
        open = nil
        return block
    }

    private func check(_ size: Int) throws(HTTP2ConnectionError) {
        guard size <= maximum else { throw HTTP2ConnectionError(.enhanceYourCalm, "\(sender)a header block over \(maximum) bytes") }
    }
}
