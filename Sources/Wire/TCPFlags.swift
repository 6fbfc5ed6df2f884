/// The control bits in byte 13 of a TCP header (RFC 9293 §3.1; ECE and CWR
/// from RFC 3168 §6.1). Prints like tcpdump: one letter per flag in bit order
/// with "." for ACK, so a SYN-ACK is `[S.]`, a bare ACK `[.]` and no flags `[none]`.
public struct TCPFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8

    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let fin = TCPFlags(rawValue: 0x01)
    public static let syn = TCPFlags(rawValue: 0x02)
    public static let rst = TCPFlags(rawValue: 0x04)
    public static let psh = TCPFlags(rawValue: 0x08)
    public static let ack = TCPFlags(rawValue: 0x10)
    public static let urg = TCPFlags(rawValue: 0x20)
    public static let ece = TCPFlags(rawValue: 0x40)
    public static let cwr = TCPFlags(rawValue: 0x80)

    public var description: String {
        if rawValue == 0 { return "[none]" }
        // tcpdump's letters, lowest bit first.
        let letters: [Character] = ["F", "S", "R", "P", ".", "U", "E", "W"]
        var text = "["
        for bit in 0 ..< 8 where rawValue & (1 << bit) != 0 {
            text.append(letters[bit])
        }
        text.append("]")
        return text
    }
}
