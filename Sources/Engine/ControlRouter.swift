internal import HTTP

/// One complete control request, as the connection collected it.
struct ControlRequest {
    var method: HTTPMethod
    var target: String
    var body: [UInt8]
}

/// One control response: always JSON, always with its length.
struct ControlResponse: Error, Equatable {
    var status: Int
    var json: [UInt8]
    /// For 405: the methods the path takes.
    var allow: [String] = []

    static func error(_ status: Int, _ message: String, errors: [String] = [], allow: [String] = []) -> ControlResponse {
        var json = JSONWriter()
        json.beginObject()
        json.field("ok", false)
        json.field("error", message)
        if !errors.isEmpty {
            json.key("errors")
            json.beginArray()
            for error in errors { json.string(error) }
            json.endArray()
        }
        json.endObject()
        return ControlResponse(status: status, json: json.bytes, allow: allow)
    }

    static func ok(_ message: String, _ extra: (inout JSONWriter) -> Void = { _ in }) -> ControlResponse {
        var json = JSONWriter()
        json.beginObject()
        json.field("ok", true)
        json.field("message", message)
        extra(&json)
        json.endObject()
        return ControlResponse(status: 200, json: json.bytes)
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 422: "Unprocessable Content"
        case 431: "Request Header Fields Too Large"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }

    /// The response on the wire: status line, fields, JSON body.
    func serialized(close: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        head += "Content-Type: application/json\r\nContent-Length: \(json.count + 1)\r\nCache-Control: no-store\r\n"
        if !allow.isEmpty { head += "Allow: \(allow.joined(separator: ", "))\r\n" }
        head += close ? "Connection: close\r\n\r\n" : "\r\n"
        // A newline after the document, so `curl --unix-socket` output ends its line.
        return Array(head.utf8) + json + [0x0A]
    }
}

/// A request's answer: at once, or when a reload's read is done.
enum ControlAnswer: Equatable {
    case now(ControlResponse)
    /// Given by `ControlServer.finishReloads` once read number `generation`
    /// has been applied; the client's later requests wait behind it.
    case afterReload(generation: Int)
    /// `GET /requests?after=ID&wait=MS` found nothing after `after`: given
    /// by `ControlServer` once something is, or when the wait is over.
    case whenRequests(after: UInt64, limit: Int, waitMilliseconds: Int)
}

/// Maps a request to the target's answer. Paths and methods:
///
///     GET    /flows                 the open flows
///     DELETE /flows/ID              close one (also POST /flows/ID/close)
///     GET    /requests              the requests and connections that finished last
///                                   (?after=ID: those after it; ?limit=N: at most N;
///                                   ?wait=MS with after: none yet, so wait up to MS for one)
///     GET    /stats                 counters and [Statistics] books
///     GET    /groups                proxy groups, health, selection
///     PUT    /groups/NAME           {"selected": "MEMBER"}
///     POST   /reload                read the profile again
enum ControlRouter {
    /// Bodies bigger than this are refused (413): the API takes only small JSON objects.
    static let maximumBodyBytes = 64 * 1024

    /// What a request asks for, once its path and method are known to fit.
    enum Endpoint: Equatable {
        case flows, stats, groups, reload
        case requests(after: UInt64?, limit: Int, waitMilliseconds: Int)
        case close(String)
        case select(group: String)
    }

    static func respond(to request: ControlRequest, target: some ControlTarget) -> ControlAnswer {
        switch route(request) {
        case let .failure(refusal):
            return .now(refusal)
        case .success(.flows):
            return .now(flows(target))
        case let .success(.requests(after, limit, wait)):
            let page = target.recentRequests(after: after, limit: limit)
            // Nothing after `after` yet (and not a Sluice whose ids started again below it): a follower waits here.
            if wait > 0, let after, page.entries.isEmpty, page.missed == 0, page.newest >= after {
                return .whenRequests(after: after, limit: limit, waitMilliseconds: wait)
            }
            return .now(requests(page))
        case .success(.stats):
            var json = JSONWriter()
            target.writeStatistics(into: &json)
            return .now(ControlResponse(status: 200, json: json.bytes))
        case .success(.groups):
            var json = JSONWriter()
            json.beginObject()
            json.key("groups")
            json.beginArray()
            for group in target.groups() { group.write(into: &json) }
            json.endArray()
            json.endObject()
            return .now(ControlResponse(status: 200, json: json.bytes))
        case .success(.reload):
            switch target.reload() {
            case let .finished(result): return .now(outcome(result))
            case let .reading(generation): return .afterReload(generation: generation)
            }
        case let .success(.close(id)):
            return .now(close(id, target))
        case let .success(.select(group)):
            return .now(select(group: group, body: request.body, target))
        }
    }

    /// The endpoint a request's path and method name, or the answer that refuses it.
    static func route(_ request: ControlRequest) -> Result<Endpoint, ControlResponse> {
        // A query selects only in /requests; elsewhere it is ignored.
        let parts = request.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let pathText = parts.first.map(String.init) ?? ""
        guard pathText.hasPrefix("/") else { return .failure(.error(400, "the request target must be a path such as /flows")) }
        var segments: [String] = []
        for raw in pathText.split(separator: "/", omittingEmptySubsequences: true) {
            guard let segment = percentDecoded(raw) else { return .failure(.error(400, "bad percent-encoding in the path")) }
            segments.append(segment)
        }
        let method = request.method
        func only(_ allowed: HTTPMethod, _ endpoint: Endpoint) -> Result<Endpoint, ControlResponse> {
            method == allowed ? .success(endpoint) : .failure(notAllowed([allowed.rawValue]))
        }
        switch segments.count {
        case 1:
            switch segments[0] {
            case "flows": return only(.get, .flows)
            case "stats": return only(.get, .stats)
            case "groups": return only(.get, .groups)
            case "reload": return only(.post, .reload)
            case "requests":
                // The method first, as on every path: a DELETE with a bad query is still a 405.
                guard method == .get else { return .failure(notAllowed([HTTPMethod.get.rawValue])) }
                switch requestsQuery(parts.count > 1 ? parts[1] : "") {
                case let .success((after, limit, wait)): return .success(.requests(after: after, limit: limit, waitMilliseconds: wait))
                case let .failure(refusal): return .failure(refusal)
                }
            default: break
            }
        case 2:
            switch segments[0] {
            case "flows": return only(.delete, .close(segments[1]))
            case "groups": return only(.put, .select(group: segments[1]))
            default: break
            }
        case 3 where segments[0] == "flows" && segments[2] == "close":
            return only(.post, .close(segments[1]))
        default:
            break
        }
        return .failure(.error(404, "no such endpoint: \(pathText) (try /flows, /requests, /stats, /groups, /reload)"))
    }

    /// Most entries one answer gives: the ring's size.
    static let maximumRequestsLimit = RecentRequests.defaultCapacity
    /// The longest a `/requests?wait=` may hold its answer (a minute).
    static let maximumRequestsWait = 60_000
    static let defaultRequestsLimit = 50

    /// `/requests`' query: `after=ID`, `limit=N` and `wait=MS` (with
    /// `after`), each at most once; anything else is refused.
    static func requestsQuery(_ query: Substring) -> Result<(after: UInt64?, limit: Int, wait: Int), ControlResponse> {
        var after: UInt64?
        var limit: Int?
        var wait: Int?
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let nameAndValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = nameAndValue[0]
            let value = nameAndValue.count > 1 ? nameAndValue[1] : ""
            switch name {
            case "after" where after == nil:
                guard let id = UInt64(value) else { return .failure(.error(400, "after= wants an id, as /requests gives them; got '\(value)'")) }
                after = id
            case "limit" where limit == nil:
                guard let n = Int(value), n >= 1, n <= maximumRequestsLimit else {
                    return .failure(.error(400, "limit= wants a whole number from 1 to \(maximumRequestsLimit); got '\(value)'"))
                }
                limit = n
            case "wait" where wait == nil:
                guard let n = Int(value), n >= 0, n <= maximumRequestsWait else {
                    return .failure(.error(400, "wait= wants milliseconds from 0 to \(maximumRequestsWait); got '\(value)'"))
                }
                wait = n
            case "after", "limit", "wait":
                return .failure(.error(400, "\(name)= is given twice"))
            default:
                return .failure(.error(400, "/requests takes after=ID, limit=N and wait=MS; got '\(name)'"))
            }
        }
        if wait != nil, after == nil {
            return .failure(.error(400, "wait= waits for requests after an id: give after=ID too"))
        }
        return .success((after, limit ?? defaultRequestsLimit, wait ?? 0))
    }

    /// Each entry is `{"id": N, "line": ...}`, its line the flow log's for it.
    static func requests(_ page: RecentRequests.Page) -> ControlResponse {
        var json = JSONWriter()
        json.beginObject()
        json.field("instance", page.instance)
        json.field("newest", Int(truncatingIfNeeded: page.newest))
        json.field("missed", Int(truncatingIfNeeded: page.missed))
        json.field("more", page.more)
        json.key("requests")
        json.beginArray()
        for (id, entry) in page.entries {
            json.beginObject()
            json.field("id", Int(truncatingIfNeeded: id))
            json.key("line")
            json.rawValue(entry.json)
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return ControlResponse(status: 200, json: json.bytes)
    }

    static func notAllowed(_ methods: [String]) -> ControlResponse {
        .error(405, "this path takes \(methods.joined(separator: ", "))", allow: methods)
    }

    static func flows(_ target: some ControlTarget) -> ControlResponse {
        let flows = target.flows()
        var json = JSONWriter()
        json.beginObject()
        json.field("count", flows.count)
        json.key("flows")
        json.beginArray()
        for flow in flows { flow.write(into: &json) }
        json.endArray()
        json.endObject()
        return ControlResponse(status: 200, json: json.bytes)
    }

    static func close(_ idText: String, _ target: some ControlTarget) -> ControlResponse {
        guard let id = UInt64(idText) else { return .error(400, "a flow id is a number, as /flows lists it; got '\(idText)'") }
        guard target.close(id: id) else { return .error(404, "no open flow with id \(id)") }
        return .ok("flow \(id) closed") { $0.field("id", Int(truncatingIfNeeded: id)) }
    }

    static func select(group: String, body: [UInt8], _ target: some ControlTarget) -> ControlResponse {
        let value: JSONValue
        do { value = try JSONValue.parse(body) } catch {
            return .error(400, "the body must be JSON such as {\"selected\": \"MEMBER\"}: \(error)")
        }
        guard let member = value["selected"]?.stringValue else {
            return .error(400, "the body must be a JSON object with a string \"selected\", such as {\"selected\": \"MEMBER\"}")
        }
        return outcome(target.select(group: group, member: member))
    }

    static func outcome(_ result: Result<String, ControlFailure>) -> ControlResponse {
        switch result {
        case let .success(message): return .ok(message)
        case let .failure(failure): return .error(failure.status, failure.message, errors: failure.errors)
        }
    }

    /// RFC 3986 percent-decoding of one path segment; nil for a bad escape or invalid UTF-8.
    static func percentDecoded(_ segment: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = segment.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): byte - 0x30
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): byte - 0x61 + 10
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): byte - 0x41 + 10
        default: nil
        }
    }
}
