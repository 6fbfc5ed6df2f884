/// One stream of an `HTTP2Gateway`: its request on the way to the session,
/// and its response on the way back to the app.
struct HTTP2GatewayStream: Sendable {
    let method: HTTPMethod
    /// The HTTP/1.1 request head without its framing field and final CRLF,
    /// which are chosen when the request goes on (`HTTP2Gateway.forward`).
    let head: [UInt8]
    /// The request's content-length field, checked against its DATA (§8.1.1).
    let contentLength: Int?
    /// DATA that arrived before the request's turn, framed as it goes on
    /// (chunks for a chunked body), and how many payload bytes it holds.
    var body: [UInt8] = []
    var bodyPayload = 0
    /// DATA bytes received in all.
    var receivedBody = 0
    /// The app ended its side (END_STREAM).
    var appEnded: Bool
    /// It ended with its HEADERS: a request without a body.
    let endedWithHeaders: Bool
    /// The body goes on chunked: no content-length, and the HEADERS did not end the stream.
    let chunked: Bool
    /// Trailers the app sent after the body; they go on only in a chunked body.
    var trailers: [HPACKHeader] = []
    /// How much more DATA the app may send (Sluice's window for it).
    var receiveWindow: Int
    /// How much DATA Sluice may send (the app's window for it).
    var sendWindow: Int
    /// Response body waiting for the windows.
    var responseData: [UInt8] = []
    /// The response ended: END_STREAM goes with the last of `responseData`,
    /// or with these trailers after it (a chunked response's, §8.1).
    var responseEnded = false
    var responseTrailers: [HPACKHeader] = []
    /// END_STREAM went to the app.
    var responseFinished = false
    /// The app reset the stream (or Sluice did): nothing more goes to it.
    var cancelled = false
    /// The session gave the stream no response and it is reset with this
    /// code once its request has gone on whole (`resetNextResponse`).
    var pendingReset: HTTP2ErrorCode?

    init(method: HTTPMethod, head: [UInt8], contentLength: Int?, appEnded: Bool, receiveWindow: Int, sendWindow: Int) {
        self.method = method
        self.head = head
        self.contentLength = contentLength
        self.appEnded = appEnded
        endedWithHeaders = appEnded
        chunked = contentLength == nil && !appEnded
        self.receiveWindow = receiveWindow
        self.sendWindow = sendWindow
    }
}
