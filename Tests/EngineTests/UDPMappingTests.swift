import Testing
@testable import Engine
import Stack
import Sys
import Wire

/// The sessions of one app endpoint's UDP mapping (Tunnel+UDPPorts.swift):
/// a datagram's sender names its session, opens one when it is a new port
/// of an address the app talks to, and is filtered otherwise.
@Suite struct UDPMappingTests {
    let app = IPAddress.v4(IPv4Address(10, 7, 0, 2))
    let fake = IPAddress.v4(IPv4Address(198, 18, 0, 5))
    let real = SysIPAddress.v4(0x0A58_0002)  // 10.88.0.2

    func key(_ destination: IPAddress, _ port: UInt16) -> FlowKey {
        FlowKey(transport: .udp, appAddress: app, appPort: 5000, destinationAddress: destination, destinationPort: port)
    }

    @Test func theSenderNamesItsSessionOrOpensOneOrIsFiltered() throws {
        let sessions = UDPMapping(UDPEndpoint(appAddress: app, appPort: 5000, family: .v4), socket: try Socket(.udp, family: .v4),
                                  token: 1, port: 40000)
        // The app wrote to a fake IP whose name is at 10.88.0.2.
        sessions.add(key(fake, 69), destination: SocketAddress(real, port: 69))
        let known = try #require(sessions.session(from: SocketAddress(real, port: 69)))
        #expect(known.key == key(fake, 69) && !known.isNew)
        // The server's transfer port: a new session, towards the address the app knows.
        let transfer = try #require(sessions.session(from: SocketAddress(real, port: 40001)))
        #expect(transfer.key == key(fake, 40001) && transfer.isNew)
        // Nobody the app talks to.
        #expect(sessions.session(from: SocketAddress(.v4(0x0A58_0003), port: 69)) == nil)
        // When the address's last session goes, so does its filter's opening.
        sessions.add(transfer.key, destination: SocketAddress(real, port: 40001))
        sessions.remove(key(fake, 69))
        #expect(sessions.session(from: SocketAddress(real, port: 69))?.isNew == true)
        sessions.remove(transfer.key)
        #expect(sessions.isEmpty)
        #expect(sessions.session(from: SocketAddress(real, port: 69)) == nil)
    }
}
