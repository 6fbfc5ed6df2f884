import Testing
import Sys

/// sendmmsg/recvmmsg through the shim, on loopback: several datagrams per call, in order, intact.
@Suite struct DatagramBatchTests {
    @Test func manyDatagramsPerCallBothWays() throws {
        let receiver = try Socket(.udp, family: .v4)
        try receiver.bind(SocketAddress(.v4(0x7f00_0001), port: 0))
        guard let address = receiver.localAddress else { Issue.record("no local address"); return }
        let sender = try Socket(.udp, family: .v4)
        guard case .value = try sender.connect(to: address) else { Issue.record("connect"); return }

        let batch = DatagramBatch(capacity: 8)
        let messages: [[UInt8]] = (0 ..< 5).map { i in (0 ..< (10 + i * 100)).map { UInt8(truncatingIfNeeded: $0 &+ i) } }
        let sent = try withPointers(messages) { pointers in try batch.send(pointers, on: sender) }
        #expect(sent == .value(5))

        let storage = (0 ..< 8).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8) }
        defer { storage.forEach { $0.deallocate() } }
        var lengths = [Int](repeating: 0, count: 8)
        // Loopback delivers at once, but poll a few times rather than trust it.
        var received = 0
        for _ in 0 ..< 100 where received == 0 {
            if case let .value(n) = try batch.receive(into: storage, lengths: &lengths, on: receiver) { received = n }
        }
        #expect(received == 5)
        for i in 0 ..< 5 {
            #expect(Array(UnsafeRawBufferPointer(rebasing: storage[i][..<lengths[i]])) == messages[i])
        }
        // Nothing more is waiting.
        #expect(try batch.receive(into: storage, lengths: &lengths, on: receiver) == .wouldBlock)
    }

    func withPointers<R>(_ arrays: [[UInt8]], _ body: ([UnsafeRawBufferPointer]) throws -> R) rethrows -> R {
        let copies = arrays.map { a -> UnsafeMutableRawBufferPointer in
            let p = UnsafeMutableRawBufferPointer.allocate(byteCount: max(a.count, 1), alignment: 8)
            a.withUnsafeBytes { p.copyMemory(from: $0) }
            return UnsafeMutableRawBufferPointer(rebasing: p[..<a.count])
        }
        defer { copies.forEach { UnsafeMutableRawBufferPointer(start: $0.baseAddress, count: 1).deallocate() } }
        return try body(copies.map { UnsafeRawBufferPointer($0) })
    }
}
