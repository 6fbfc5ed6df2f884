// The small numbered vocabularies of DNS (RFC 1035 §3.2, §4.1.1 and the IANA
// "Domain Name System (DNS) Parameters" registry). Each prints the way
// tcpdump does, so that a message's description reads like a trace.

/// A resource record TYPE or question QTYPE.
public struct DNSType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let a = DNSType(rawValue: 1)
    public static let ns = DNSType(rawValue: 2)
    public static let cname = DNSType(rawValue: 5)
    public static let soa = DNSType(rawValue: 6)
    public static let ptr = DNSType(rawValue: 12)
    public static let mx = DNSType(rawValue: 15)
    public static let txt = DNSType(rawValue: 16)
    public static let aaaa = DNSType(rawValue: 28)
    public static let srv = DNSType(rawValue: 33)
    public static let opt = DNSType(rawValue: 41)
    public static let svcb = DNSType(rawValue: 64)
    public static let https = DNSType(rawValue: 65)
    public static let any = DNSType(rawValue: 255)

    public var description: String {
        switch rawValue {
        case 1: return "A"
        case 2: return "NS"
        case 5: return "CNAME"
        case 6: return "SOA"
        case 12: return "PTR"
        case 15: return "MX"
        case 16: return "TXT"
        case 28: return "AAAA"
        case 33: return "SRV"
        case 41: return "OPT"
        case 64: return "SVCB"
        case 65: return "HTTPS"
        case 255: return "ANY"
        default: return "Type\(rawValue)"
        }
    }
}

/// A resource record CLASS or question QCLASS.
public struct DNSClass: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let internet = DNSClass(rawValue: 1)
    public static let chaos = DNSClass(rawValue: 3)
    public static let hesiod = DNSClass(rawValue: 4)
    public static let any = DNSClass(rawValue: 255)

    public var description: String {
        switch rawValue {
        case 1: return "IN"
        case 3: return "CHAOS"
        case 4: return "HS"
        case 255: return "ANY"
        default: return "(Class \(rawValue))"
        }
    }
}

/// The 4-bit OPCODE of the header.
public struct DNSOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let query = DNSOpcode(rawValue: 0)
    public static let inverseQuery = DNSOpcode(rawValue: 1)
    public static let status = DNSOpcode(rawValue: 2)
    public static let notify = DNSOpcode(rawValue: 4)
    public static let update = DNSOpcode(rawValue: 5)

    /// tcpdump's suffix after the id: nothing for a standard query.
    public var description: String {
        switch rawValue {
        case 0: return ""
        case 1: return " inv_q"
        case 2: return " stat"
        case 4: return " notify"
        case 5: return " update"
        default: return " op\(rawValue)"
        }
    }
}

/// The 4-bit RCODE of the header.
public struct DNSResponseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let noError = DNSResponseCode(rawValue: 0)
    public static let formatError = DNSResponseCode(rawValue: 1)
    public static let serverFailure = DNSResponseCode(rawValue: 2)
    public static let nameError = DNSResponseCode(rawValue: 3)
    public static let notImplemented = DNSResponseCode(rawValue: 4)
    public static let refused = DNSResponseCode(rawValue: 5)

    /// tcpdump's suffix after the id: nothing for NOERROR.
    public var description: String {
        switch rawValue {
        case 0: return ""
        case 1: return " FormErr"
        case 2: return " ServFail"
        case 3: return " NXDomain"
        case 4: return " NotImp"
        case 5: return " Refused"
        default: return " Resp\(rawValue)"
        }
    }
}
