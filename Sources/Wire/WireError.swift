/// Why a packet or message was refused. Parsers throw it once, at the border;
/// past that, a validated view's accessors cannot trap.
public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The buffer ends before a header or a length field says it should.
    case truncated(layer: Layer, needed: Int, available: Int)
    /// A field holds a value that no valid packet can have (a header length
    /// shorter than the fixed header, a total length shorter than the header…).
    case malformed(layer: Layer, reason: Reason)
    /// Well formed, but not something Sluice speaks (IP version 5, say).
    case unsupported(layer: Layer, reason: Reason)

    public enum Layer: String, Sendable {
        case ipv4 = "IPv4", ipv6 = "IPv6", tcp = "TCP", udp = "UDP"
        case icmpv4 = "ICMP", icmpv6 = "ICMPv6", dns = "DNS"
    }

    /// A closed set of reasons keeps the error path free of string building.
    public enum Reason: String, Sendable {
        case version = "version"
        case headerLength = "header length"
        case totalLength = "total length"
        case payloadLength = "payload length"
        case dataOffset = "data offset"
        case optionLength = "option length"
        case extensionHeader = "extension header"
        case compressionLoop = "name compression loop"
        case labelLength = "label length"
        case nameLength = "name length"
        case pointer = "compression pointer"
        case rdataLength = "rdata length"
        case count = "record count"
        case bufferTooSmall = "output buffer too small"
        case fieldRange = "field out of range"
    }

    public var description: String {
        switch self {
        case let .truncated(layer, needed, available):
            return "\(layer.rawValue): truncated: need \(needed) bytes, have \(available)"
        case let .malformed(layer, reason):
            return "\(layer.rawValue): malformed \(reason.rawValue)"
        case let .unsupported(layer, reason):
            return "\(layer.rawValue): unsupported \(reason.rawValue)"
        }
    }
}
