internal import HTTP

/// What the control API reads and changes: the running tunnel, or a fake in
/// tests. Called only on the loop's thread, between events, so an answer sees
/// the tunnel's state as of that moment and a change takes effect before the
/// next packet.
protocol ControlTarget: AnyObject {
    /// The open flows, in a stable order (by id).
    func flows() -> [ControlFlow]
    /// Closes the flow with this id (the app sees a reset); false when there is none.
    func close(id: UInt64) -> Bool
    /// The tunnel's counters and the profile's [Statistics] books, as one JSON object.
    func writeStatistics(into json: inout JSONWriter)
    func groups() -> [ControlGroup]
    /// Switches a select group to one of its members; the message says what changed.
    func select(group: String, member: String) -> Result<String, ControlFailure>
    /// Reads the profile again (as SIGHUP does); a profile with errors changes nothing.
    func reload() -> ControlReload
    /// The requests and connections that finished last: after id `after`, or the newest.
    func recentRequests(after: UInt64?, limit: Int) -> RecentRequests.Page
}

/// How a reload request goes. The read runs on a worker thread (a long
/// ad-blocking list takes seconds), so that the tunnel and the other clients
/// go on meanwhile; the loop applies it when done and then gives the answer
/// (`ControlServer.finishReloads`).
enum ControlReload: Equatable {
    /// Answered at once: nothing to reload, or no worker thread could be
    /// started and the file was read on the loop's thread.
    case finished(Result<String, ControlFailure>)
    /// Read number `generation`, the first to begin after this request, will answer it.
    case reading(generation: Int)
}

/// Why a control request could not be carried out, and the HTTP status that says so.
struct ControlFailure: Error, Equatable, CustomStringConvertible {
    enum Kind: Equatable {
        /// No such group, member or flow: 404.
        case notFound
        /// The request is understood but the state forbids it (a group that is not select): 409.
        case conflict
        /// What was asked for is wrong (a profile with errors): 422.
        case invalid
    }

    var kind: Kind
    var message: String
    /// One line per error, for a reload of a profile with errors.
    var errors: [String] = []

    var status: Int {
        switch kind {
        case .notFound: 404
        case .conflict: 409
        case .invalid: 422
        }
    }

    var description: String { ([message] + errors).joined(separator: "\n") }
}

/// One open flow as the control API lists it. Optional fields are what the
/// tunnel does not (yet) know about the flow; they are written as null.
struct ControlFlow: Equatable, CustomStringConvertible {
    /// The flow's id for `DELETE /flows/ID`: its connection id, as the flow log names it.
    var id: UInt64?
    /// `TCP`, `UDP`, `ICMP`.
    var transport: String
    var appAddress: String
    var appPort: Int
    /// Nil while unknown: a proxy client that has not said where to yet, or a UDP association (each datagram says).
    var destinationAddress: String?
    var destinationPort: Int?
    var domain: String?
    /// Where the domain came from: `dns` (a fake IP), `host` (the HTTP Host header) or `sni`.
    var domainSource: String?
    /// The program that opened it (`curl[4242]`), when an owner rule made Sluice ask.
    var process: String?
    /// The rule that decided the flow (`file:line: text`).
    var rule: String?
    /// The policy it chose, through its groups (`Proxies → proxy-a`).
    var policy: String?
    /// Where the upstream socket goes: the destination or a proxy.
    var upstream: String?
    /// Payload bytes from the app (up) and to it (down).
    var bytesUp: Int?
    var bytesDown: Int?
    var ageSeconds: Double?
    /// The TCP state (`ESTABLISHED`...), or `connecting`, `proxy-handshake`, `sniffing`, `answering`, `resolving`, `pending`, `open`.
    var state: String

    var description: String {
        "\(id.map(String.init) ?? "-") \(transport) \(appAddress).\(appPort) > \(destinationAddress ?? "-").\(destinationPort.map(String.init) ?? "-")"
            + (domain.map { " (\($0))" } ?? "") + " \(state)"
    }

    func write(into json: inout JSONWriter) {
        json.beginObject()
        json.key("id")
        if let id { json.int(Int(truncatingIfNeeded: id)) } else { json.null() }
        json.field("transport", transport)
        json.field("app-address", appAddress)
        json.field("app-port", appPort)
        json.field("destination-address", destinationAddress)
        json.field("destination-port", destinationPort)
        json.field("domain", domain)
        json.field("domain-source", domainSource)
        json.field("process", process)
        json.field("rule", rule)
        json.field("policy", policy)
        json.field("upstream", upstream)
        json.field("bytes-up", bytesUp)
        json.field("bytes-down", bytesDown)
        json.field("age-seconds", ageSeconds)
        json.field("state", state)
        json.endObject()
    }

    /// Reads what `write` wrote (the `sluice flows` client's side).
    init?(_ value: JSONValue) {
        guard let transport = value["transport"]?.stringValue, let appAddress = value["app-address"]?.stringValue,
              let appPort = value["app-port"]?.intValue, let state = value["state"]?.stringValue
        else { return nil }
        self.init(id: value["id"]?.intValue.map { UInt64(truncatingIfNeeded: $0) }, transport: transport,
                  appAddress: appAddress, appPort: appPort, destinationAddress: value["destination-address"]?.stringValue,
                  destinationPort: value["destination-port"]?.intValue, state: state)
        domain = value["domain"]?.stringValue
        domainSource = value["domain-source"]?.stringValue
        process = value["process"]?.stringValue
        rule = value["rule"]?.stringValue
        policy = value["policy"]?.stringValue
        upstream = value["upstream"]?.stringValue
        bytesUp = value["bytes-up"]?.intValue
        bytesDown = value["bytes-down"]?.intValue
        ageSeconds = value["age-seconds"]?.doubleValue
    }

    init(id: UInt64?, transport: String, appAddress: String, appPort: Int, destinationAddress: String?,
         destinationPort: Int?, state: String) {
        self.id = id
        self.transport = transport
        self.appAddress = appAddress
        self.appPort = appPort
        self.destinationAddress = destinationAddress
        self.destinationPort = destinationPort
        self.state = state
    }
}

/// One proxy group: its kind, members with their health, and the member in use.
struct ControlGroup: Equatable {
    struct Member: Equatable {
        var name: String
        /// `unchecked`, `healthy` or `down`, from the last health check.
        var health: String
        var latencyMilliseconds: Int?
    }

    var name: String
    /// `select`, `fallback`, `url-test`.
    var kind: String
    var selected: String?
    var members: [Member]

    func write(into json: inout JSONWriter) {
        json.beginObject()
        json.field("name", name)
        json.field("kind", kind)
        json.field("selected", selected)
        json.key("members")
        json.beginArray()
        for member in members {
            json.beginObject()
            json.field("name", member.name)
            json.field("health", member.health)
            json.field("latency-ms", member.latencyMilliseconds)
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    init(name: String, kind: String, selected: String?, members: [Member]) {
        self.name = name
        self.kind = kind
        self.selected = selected
        self.members = members
    }

    init?(_ value: JSONValue) {
        guard let name = value["name"]?.stringValue, let kind = value["kind"]?.stringValue,
              let members = value["members"]?.arrayValue else { return nil }
        self.init(name: name, kind: kind, selected: value["selected"]?.stringValue, members: members.compactMap { member in
            guard let name = member["name"]?.stringValue else { return nil }
            return Member(name: name, health: member["health"]?.stringValue ?? "unchecked",
                          latencyMilliseconds: member["latency-ms"]?.intValue)
        })
    }
}
