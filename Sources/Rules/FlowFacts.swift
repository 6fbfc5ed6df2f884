public import HTTP
public import Wire

/// What the engine knows about a flow when it asks the rules. Everything but
/// the transport and ports may arrive late: the domain from SNI or the Host
/// header, the protocol and the request once the first bytes are sniffed.
public struct FlowFacts: Sendable, Equatable, CustomStringConvertible {
    public enum Transport: String, Sendable, Equatable {
        case tcp = "TCP", udp = "UDP", icmp = "ICMP"
    }

    public enum ApplicationProtocol: String, Sendable, Equatable {
        /// QUIC: a UDP flow whose first datagram is a client Initial packet;
        /// its name is in the ClientHello inside, which may span datagrams.
        case http = "HTTP", tls = "TLS", quic = "QUIC"
    }

    public var transport: Transport
    /// The real destination; nil when the flow was addressed to a fake IP and is
    /// known by name only. Rules never resolve a name to test IP-CIDR.
    public var destination: IPAddress?
    public var destinationPort: UInt16
    public var sourcePort: UInt16
    /// Where the flow comes from (SRC-IP): the app's address, a LAN device's
    /// through a gateway, a proxy client's.
    public var source: IPAddress?
    /// From the fake-IP map, [Host], or the TLS SNI (over TCP or in QUIC; lowercased or not).
    public var domain: String?
    /// Nil until sniffed (or for flows that are neither).
    public var applicationProtocol: ApplicationProtocol?
    /// The request head, once an HTTP request (plain or intercepted) is read.
    public var request: RequestFacts?
    /// Who opened the flow, when a rule needs it and the kernel could say.
    public var owner: FlowOwner?

    public init(transport: Transport, destination: IPAddress? = nil, destinationPort: UInt16 = 0, sourcePort: UInt16 = 0,
                domain: String? = nil, applicationProtocol: ApplicationProtocol? = nil, request: RequestFacts? = nil, owner: FlowOwner? = nil) {
        self.transport = transport; self.destination = destination; self.destinationPort = destinationPort
        self.sourcePort = sourcePort; self.domain = domain; self.applicationProtocol = applicationProtocol
        self.request = request; self.owner = owner
    }

    public var description: String {
        var text = "\(transport) :\(sourcePort) > \(destination.map { "\($0)" } ?? "?").\(destinationPort)"
        if let domain { text += " (\(domain))" }
        if let applicationProtocol { text += " \(applicationProtocol)" }
        if let request { text += " \(request)" }
        if let owner { text += " from \(owner)" }
        return text
    }
}

/// One HTTP request head, as the rules see it.
public struct RequestFacts: Sendable, Equatable, CustomStringConvertible {
    public var method: String
    /// Absolute: "http://host[:port]/path?query".
    public var url: String {
        didSet { (host, hostIsAddress) = Self.host(of: url) }
    }
    /// In order, as sent; names compare case-insensitively. The head's own
    /// list in HTTP mode, so deciding a request copies none of its fields.
    public var headers: HTTPHeaders
    /// The URL's host, lowercased, without port, brackets or trailing dot.
    /// Taken apart once per URL: every domain rule asks for it.
    public private(set) var host: String?
    /// The host is an address literal, which names no domain.
    public private(set) var hostIsAddress = false

    public init(method: String, url: String, headers: HTTPHeaders = HTTPHeaders()) {
        self.method = method; self.url = url; self.headers = headers
        (host, hostIsAddress) = Self.host(of: url)
    }

    /// For a caller that took `url` apart already: `host` must be what
    /// `RequestURL(url)?.host` gives (HTTP mode has it for each request).
    public init(method: String, url: String, headers: HTTPHeaders, host: String?, hostIsAddress: Bool) {
        self.method = method; self.url = url; self.headers = headers
        self.host = host; self.hostIsAddress = hostIsAddress
    }

    static func host(of url: String) -> (String?, Bool) {
        guard let host = RequestURL(url)?.host else { return (nil, false) }
        return (host, IPAddress(host) != nil)
    }

    /// The first field named `name` (case-insensitive).
    public func header(_ name: String) -> String? { headers[name] }

    public var description: String { "\(method) \(url)" }
}

extension HTTPHeaders {
    /// Rules' own list (`sluice match`'s headers, a profile's) as a head's.
    public init(_ fields: [HeaderField]) { self.init(fields.map { HTTPHeader(name: $0.name, value: $0.value) }) }
}
