// What reading a QUIC flow's server name costs the loop: a 1200-byte client
// Initial opened (keys derived from its connection ID, header protection
// removed, AES-128-GCM opened and checked, CRYPTO frames put together, the
// ClientHello read), and a hello over two datagrams. It runs once or twice
// per new QUIC flow sent to an address, only when a rule needs the name.
import HTTP

func benchQUIC(rounds: Int) {
    let dcid: [UInt8] = [0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08]
    func hello(_ extra: Int) -> [UInt8] {
        // A ClientHello with an SNI and `extra` bytes of padding extension.
        let name = Array("bench.test".utf8)
        var extensions: [UInt8] = [0, 0, 0, UInt8(name.count + 5), 0, UInt8(name.count + 3), 0, 0, UInt8(name.count)] + name
        extensions += [0, 21, UInt8(extra >> 8), UInt8(extra & 0xff)] + [UInt8](repeating: 0, count: extra)
        let body: [UInt8] = [3, 3] + [UInt8](repeating: 0x2a, count: 32) + [0, 0, 2, 0x13, 0x01, 1, 0]
            + [UInt8(extensions.count >> 8), UInt8(extensions.count & 0xff)] + extensions
        return [1, 0, UInt8(body.count >> 8), UInt8(body.count & 0xff)] + body
    }
    func crypto(_ offset: Int, _ data: ArraySlice<UInt8>) -> [UInt8] {
        [0x06, 0x40 | UInt8(offset >> 8), UInt8(offset & 0xff), 0x40 | UInt8(data.count >> 8), UInt8(data.count & 0xff)] + data
    }
    let small = hello(300)
    let one = QUICInitial.protect(version: .v1, destinationConnectionID: dcid, packetNumber: 0, frames: crypto(0, small[...]))
    let big = hello(1600)
    let two = [QUICInitial.protect(version: .v1, destinationConnectionID: dcid, packetNumber: 0, frames: crypto(0, big[..<1000])),
               QUICInitial.protect(version: .v1, destinationConnectionID: dcid, packetNumber: 1, frames: crypto(1000, big[1000...]))]
    print("QUIC benchmark: server names read from client Initials, median of \(rounds) rounds (µs per flow)")
    for (label, datagrams) in [("one 1200-byte Initial", [one]), ("a hello over two Initials", two)] {
        var named = 0
        let ns = nanosecondsPerCall(rounds: rounds, iterations: 2000, calls: 1) {
            var sniffer = QUICClientHelloSniffer()
            var result = SniffResult.needMore
            for datagram in datagrams { result = datagram.withUnsafeBytes { sniffer.feed($0) } }
            if result == .serverName("bench.test") { named += 1 }
        }
        print("  \(label): \(format1(ns / 1000)) µs (\(named / rounds) of 2000 named a round)")
    }
}
