import Testing
import TestSupport
import Wire

/// Byte plumbing shared by the IP, UDP and ICMP tests.
enum IPTestSupport {
    typealias T = IPTestSupport

    static let poison: UInt8 = 0xAA

    /// Bytes from hex text; whitespace is ignored.
    static func hex(_ text: String) -> [UInt8] {
        let digits = text.filter { !$0.isWhitespace }.map { UInt8(String($0), radix: 16)! }
        precondition(digits.count % 2 == 0, "odd number of hex digits")
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }

    /// Calls `body` with `bytes` seen as a buffer based at 0 that really sits
    /// in the middle of a larger one, poisoned on both sides.
    static func inMiddle<R>(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let big = [UInt8](repeating: poison, count: 37) + bytes + [UInt8](repeating: poison, count: 29)
        return try big.withUnsafeBytes { try body($0.sub(37, bytes.count)) }
    }

    /// Like `inMiddle`, but the region runs on into the poison after `bytes`
    /// (`extra` bytes of it), as link-layer padding would.
    static func withPadding<R>(_ bytes: [UInt8], extra: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let big = [UInt8](repeating: poison, count: 11) + bytes + [UInt8](repeating: poison, count: extra + 5)
        return try big.withUnsafeBytes { try body($0.sub(11, bytes.count + extra)) }
    }

    /// A `capacity`-byte buffer of poison, handed to `body` to write into.
    static func poisoned(_ capacity: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows -> [UInt8] {
        var out = [UInt8](repeating: poison, count: capacity)
        try out.withUnsafeMutableBytes { try body($0) }
        return out
    }

    /// Every prefix shorter than `bytes` must be refused as truncated.
    static func expectEveryTruncationThrows(
        _ bytes: [UInt8], below limit: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation,
        _ parse: (UnsafeRawBufferPointer) throws(WireError) -> Void
    ) {
        for n in 0 ..< (limit ?? bytes.count) {
            let failure = bytes.withUnsafeBytes { whole in
                T.error { () throws(WireError) in try parse(whole.sub(0, n)) }
            }
            guard let failure else {
                Issue.record("a \(n)-byte prefix of \(bytes.count) parsed", sourceLocation: sourceLocation)
                continue
            }
            guard case let .truncated(_, needed, available) = failure else {
                Issue.record("\(n) bytes: \(failure), not truncated", sourceLocation: sourceLocation)
                continue
            }
            #expect(available == n, sourceLocation: sourceLocation)
            #expect(needed > n, sourceLocation: sourceLocation)
        }
    }

    /// The IP datagrams of a fixture capture.
    static func fixture(_ name: String) throws -> [[UInt8]] {
        let capture = try PcapFixture.named(name)
        for packet in capture.packets {
            // A datagram cut by snaplen could not be parsed as whole; say so rather than fail obscurely.
            #expect(packet.originalLength == packet.bytes.count, "\(name): a packet was cut by snaplen")
        }
        return capture.packets.map(\.bytes)
    }

    /// The one-line description of the datagram in `bytes`.
    static func line(_ bytes: [UInt8]) throws -> String {
        try bytes.withUnsafeBytes { raw throws(WireError) in try IPPacketView(raw).description }
    }

    /// `throws(WireError)` closures cannot be written inline in `#expect(throws:)`; this adapts one.
    static func error(_ body: () throws(WireError) -> Void) -> WireError? {
        do { try body(); return nil } catch { return error }
    }
}
