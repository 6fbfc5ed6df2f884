internal import HTTP
internal import Sys

/// One request to a running Sluice's control socket, and its answer: what
/// `sluice status`, `flows`, `close`, `select` and `reload` are made of.
struct ControlClient {
    let path: String

    struct Reply {
        var status: Int
        var json: JSONValue

        /// What a refusal says, as the clients print it.
        var errorMessage: String { "sluice: \(json["error"]?.stringValue ?? "the control API answered \(status)")" }
    }

    /// Why the socket could not be used, said so that the user knows what to do.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Answers are refused beyond this (a flow list of a busy tunnel fits easily).
    static let maximumReplyBytes = 64 << 20

    /// A reload answers when its read is done, which for a long list takes seconds.
    static let reloadTimeoutSeconds = 120

    func request(_ method: String, _ target: String, body: String? = nil, timeoutSeconds: Int = 5) throws(Failure) -> Reply {
        let socket: UnixSocket
        do { socket = try UnixSocket.connect(to: path, timeoutMilliseconds: timeoutSeconds * 1000) } catch {
            throw Failure(description: Self.explainConnect(error, path: path))
        }
        var head = "\(method) \(target) HTTP/1.1\r\nHost: sluice\r\nConnection: close\r\n"
        if let body {
            head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
        }
        head += "\r\n" + (body ?? "")
        let bytes: [UInt8]
        do {
            try socket.writeAll(Array(head.utf8))
            bytes = try socket.readToEnd(limit: Self.maximumReplyBytes)
        } catch {
            let detail = error == .wouldBlock ? "no answer within \(timeoutSeconds) seconds" : "\(error)"
            throw Failure(description: "sluice: the control socket \(path) accepted but did not answer: \(detail)")
        }
        return try Self.parse(bytes, path: path)
    }

    /// The status line and the JSON body of a whole response.
    static func parse(_ bytes: [UInt8], path: String) throws(Failure) -> Reply {
        var parser = HTTPResponseParser()
        let step = bytes.withUnsafeBytes { raw in Result { () throws(HTTPParseError) in try parser.parse(raw) } }
        guard case let .success(.head(head, consumed)?) = step else {
            throw Failure(description: "sluice: \(path) did not answer with HTTP (is it Sluice's control socket?)")
        }
        do {
            return Reply(status: head.status, json: try JSONValue.parse(bytes[consumed...]))
        } catch {
            throw Failure(description: "sluice: \(path) answered \(head.status) without valid JSON: \(error)")
        }
    }

    static func explainConnect(_ error: Errno, path: String) -> String {
        switch error {
        case .permissionDenied:
            return "sluice: permission denied on the control socket \(path) (EACCES): it is root's only (mode 0600); run this as root, for example with sudo"
        case .noSuchFileOrDirectory:
            return "sluice: no control socket at \(path) (ENOENT): is Sluice running (sluice exec, run or proxy)? If it was started with --control PATH, give the same path here; "
                + "a Sluice run by another user answers in that user's folder (/run/sluice for root, else $XDG_RUNTIME_DIR/sluice or /tmp/sluice-UID)"
        case .connectionRefused:
            return "sluice: nobody answers on \(path) (ECONNREFUSED): the Sluice that made it has stopped"
        default:
            return "sluice: cannot connect to the control socket \(path): \(error)"
        }
    }
}
