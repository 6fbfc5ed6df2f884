import Glibc
import Sys
import Testing

/// `Socket.ignoreArrivals(onInterface:)`: the kernel drops what arrives
/// through that interface and keeps the rest. On loopback, whose index
/// every namespace knows: a filter for lo drops a datagram sent over it, a
/// filter for another index lets it through.
@Suite struct ArrivalFilterTests {
    func roundTrip(filter index: UInt32?) throws -> Bool {
        let receiver = try Socket(.udp, family: .v4)
        try receiver.bind(SocketAddress(.v4(0x7f00_0001), port: 0))
        if let index { try receiver.ignoreArrivals(onInterface: index) }
        guard let address = receiver.localAddress else { Issue.record("no local address"); return false }
        let sender = try Socket(.udp, family: .v4)
        let message: [UInt8] = [1, 2, 3, 4]
        _ = try message.withUnsafeBytes { try sender.send($0, to: address) }
        // A datagram to loopback is queued before send returns: poll a few times rather than trust it.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        for _ in 0 ..< 50 {
            if case let .value((n, _)) = try receiver.receive(into: buffer) { return n == 4 }
            usleep(2000)
        }
        return false
    }

    @Test func whatArrivesThroughTheInterfaceIsDropped() throws {
        let loopback = if_nametoindex("lo")
        #expect(loopback != 0)
        #expect(try roundTrip(filter: nil))
        #expect(try !roundTrip(filter: loopback))
        #expect(try roundTrip(filter: loopback + 1000))
    }
}
