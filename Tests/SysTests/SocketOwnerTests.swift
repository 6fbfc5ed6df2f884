import Glibc
@testable import Sys
import Testing

/// sock_diag and /proc lead from a flow's addresses to the process that
/// holds its socket: here, this test process, over loopback only.
@Suite struct SocketOwnerTests {
    static func inode(of descriptor: borrowing FileDescriptor) -> UInt32 {
        var status = stat()
        _ = fstat(descriptor.rawValue, &status)
        return UInt32(truncatingIfNeeded: status.st_ino)
    }

    /// A listener on `listener` (port 0) and a client of `family` connected
    /// to it at `target` (the listener's address unless given); `body` gets
    /// the client, the server's port and the client's.
    static func connection(listener: SysIPAddress, family: SysIPAddress.Family? = nil, target: SysIPAddress? = nil,
                           _ body: (borrowing Socket, _ serverPort: UInt16, _ clientPort: UInt16) throws -> Void) throws {
        let server = try Socket(.tcp, family: listener.family)
        try server.bind(SocketAddress(listener, port: 0))
        try server.listen()
        let serverPort = try #require(server.localAddress as SocketAddress?).port
        let client = try Socket(.tcp, family: family ?? listener.family)
        _ = try client.connect(to: SocketAddress(target ?? listener, port: serverPort))
        try body(client, serverPort, try #require(client.localAddress as SocketAddress?).port)
    }

    /// `--forward auto`'s question: which TCP sockets listen, of each family;
    /// connected ones are not listed.
    @Test func listeningSocketsAreListedByFamily() throws {
        try Self.connection(listener: SysIPAddress("127.0.0.1")!) { client, serverPort, clientPort in
            let v6 = try Socket(.tcp, family: .v6)
            try v6.bind(SocketAddress(SysIPAddress("::1")!, port: 0))
            try v6.listen()
            let v6Port = try #require(v6.localAddress as SocketAddress?).port
            let diagnostics = try SocketDiagnostics()
            let four = try diagnostics.listeningTCPSockets(family: .v4)
            let six = try diagnostics.listeningTCPSockets(family: .v6)
            #expect(four.contains { $0.localPort == serverPort && $0.localAddress == SysIPAddress("127.0.0.1")! })
            #expect(!four.contains { $0.localPort == clientPort }, "the connected client does not listen")
            #expect(six.contains { $0.localPort == v6Port && $0.localAddress == SysIPAddress("::1")! })
            #expect(!six.contains { $0.localPort == serverPort })
        }
    }

    /// `--forward auto`'s UDP question: bound sockets not connected anywhere
    /// (a server's) are listed with their port; a connected one is not.
    @Test func unconnectedUDPSocketsAreListed() throws {
        let loopback = SysIPAddress("127.0.0.1")!
        let server = try Socket(.udp, family: .v4)
        try server.bind(SocketAddress(loopback, port: 0))
        let serverPort = try #require(server.localAddress as SocketAddress?).port
        let client = try Socket(.udp, family: .v4)
        _ = try client.connect(to: SocketAddress(loopback, port: serverPort))
        let clientPort = try #require(client.localAddress as SocketAddress?).port
        let found = try SocketDiagnostics().unconnectedUDPSockets(family: .v4)
        #expect(found.contains { $0.localPort == serverPort && $0.remotePort == 0 })
        #expect(!found.contains { $0.localPort == clientPort })
    }

    @Test func aConnectingTCPSocketIsFoundByItsAddressesAndLeadsToThisProcess() throws {
        let loopback = SysIPAddress("127.0.0.1")!
        try Self.connection(listener: loopback) { client, serverPort, clientPort in
            let diagnostics = try SocketDiagnostics()
            let entry = try #require(try diagnostics.tcpSocket(local: loopback, localPort: clientPort,
                                                               remote: loopback, remotePort: serverPort))
            #expect(entry.inode == Self.inode(of: client.descriptor))
            #expect(entry.userID == getuid())
            #expect(entry.localPort == clientPort)
            // The other direction is the server's accepted socket, not the client's.
            let reverse = try diagnostics.tcpSocket(local: loopback, localPort: serverPort, remote: loopback, remotePort: clientPort)
            #expect(reverse?.inode != entry.inode)
            // Nothing is connected from port 1.
            #expect(try diagnostics.tcpSocket(local: loopback, localPort: 1, remote: loopback, remotePort: serverPort) == nil)

            var table = ProcessTable()
            let holder = table.process(holdingSocket: entry.inode, userID: entry.userID)
            let process = try #require(holder)
            #expect(process.id == getpid())
            let exe = try #require(Files.readLink("/proc/self/exe"))
            #expect(process.path == exe)
            #expect(process.name == String(exe.split(separator: "/").last!))
            // Asked again, the process is found first among the recent ones.
            let again = table.process(holdingSocket: entry.inode, userID: nil)
            #expect(again?.id == getpid())
            // A socket nobody holds any more.
            let closed = try Socket(.udp, family: .v4)
            let gone = Self.inode(of: closed.descriptor)
            _ = consume closed
            let nobody = table.process(holdingSocket: gone, userID: nil)
            #expect(nobody == nil)
        }
    }

    @Test func aUDPSocketIsFoundByItsPortExactOrWildcard() throws {
        let loopback = SysIPAddress("127.0.0.1")!
        let bound = try Socket(.udp, family: .v4)
        try bound.bind(SocketAddress(loopback, port: 0))
        let boundPort = try #require(bound.localAddress as SocketAddress?).port
        let wildcard = try Socket(.udp, family: .v4)
        try wildcard.bind(SocketAddress(.anyV4, port: 0))
        let wildcardPort = try #require(wildcard.localAddress as SocketAddress?).port
        let dual = try Socket(.udp, family: .v6)
        try dual.bind(SocketAddress(.anyV6, port: 0))
        let dualPort = try #require(dual.localAddress as SocketAddress?).port

        let diagnostics = try SocketDiagnostics()
        #expect(try diagnostics.udpSocket(family: .v4, local: loopback, localPort: boundPort)?.inode == Self.inode(of: bound.descriptor))
        #expect(try diagnostics.udpSocket(family: .v4, local: loopback, localPort: wildcardPort)?.inode == Self.inode(of: wildcard.descriptor))
        // An IPv6 socket that sends to IPv4 addresses is in the IPv6 dump.
        #expect(try diagnostics.udpSocket(family: .v4, local: loopback, localPort: dualPort) == nil)
        #expect(try diagnostics.udpSocket(family: .v6, local: loopback, localPort: dualPort)?.inode == Self.inode(of: dual.descriptor))
        var table = ProcessTable()
        let holder = table.process(holdingSocket: Self.inode(of: dual.descriptor), userID: getuid())
        #expect(holder?.id == getpid())
    }

    @Test func answersAreReadWithinTheirLengths() {
        // A message that claims more bytes than the datagram holds.
        var bytes = [UInt8](repeating: 0, count: 16)
        bytes[0] = 200
        bytes[8] = 7
        let step = bytes.withUnsafeBytes { SocketDiagnostics.walk($0, sequence: 7) { _ in true } }
        #expect(step == .failed(.protocolError))
        // NLMSG_ERROR with ENOENT: not found.
        var error = [UInt8](repeating: 0, count: 20)
        error[0] = 20; error[4] = 2; error[8] = 7 // NLMSG_ERROR
        withUnsafeBytes(of: Int32(-ENOENT)) { for (i, b) in $0.enumerated() { error[16 + i] = b } }
        #expect(error.withUnsafeBytes { SocketDiagnostics.walk($0, sequence: 7) { _ in true } } == .failed(.noSuchFileOrDirectory))
        // The same for another request is not this one's answer.
        #expect(error.withUnsafeBytes { SocketDiagnostics.walk($0, sequence: 8) { _ in true } } == .more)
        // An answer too short for an inet_diag_msg.
        var short = [UInt8](repeating: 0, count: 24)
        short[0] = 24; short[4] = 20; short[8] = 7
        #expect(short.withUnsafeBytes { SocketDiagnostics.walk($0, sequence: 7) { _ in true } } == .failed(.protocolError))
    }
}

/// The search thread: requests and answers over its socketpair, and a walk
/// limited to one network namespace.
@Suite struct ProcessSearchTests {
    @Test func theThreadFindsTheHolderOfASocketAndAnswersInOrder() throws {
        let loopback = SysIPAddress("127.0.0.1")!
        let udp = try Socket(.udp, family: .v4)
        try udp.bind(SocketAddress(loopback, port: 0))
        let inode = SocketOwnerTests.inode(of: udp.descriptor)
        let search = try ProcessSearch(networkNamespace: ProcessTable.namespaceInode("/proc/self/ns/net"))
        #expect(search.submit(token: 7, inode: inode, userID: getuid()))
        #expect(search.submit(token: 8, inode: 0, userID: getuid()))
        var answers: [ProcessSearch.Answer] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while answers.count < 2, ContinuousClock.now < deadline {
            var ready = pollfd(fd: search.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
            _ = poll(&ready, 1, 100)
            answers += search.answers()
        }
        #expect(answers.map(\.token) == [7, 8])
        #expect(answers.first?.process?.id == getpid())
        #expect(answers.first?.process?.path == Files.readLink("/proc/self/exe"))
        #expect(answers.last?.process == nil)
    }

    @Test func aWalkLimitedToAnotherNamespaceFindsNothingHere() throws {
        let udp = try Socket(.udp, family: .v4)
        try udp.bind(SocketAddress(SysIPAddress("127.0.0.1")!, port: 0))
        let inode = SocketOwnerTests.inode(of: udp.descriptor)
        let here = try #require(ProcessTable.namespaceInode("/proc/self/ns/net"))
        var elsewhere = ProcessTable(networkNamespace: here &+ 1)
        #expect(elsewhere.process(holdingSocket: inode, userID: nil) == nil)
        var local = ProcessTable(networkNamespace: here)
        #expect(local.process(holdingSocket: inode, userID: nil)?.id == getpid())
    }

    @Test func messagesRoundTripAndBadOnesAreRefused() {
        let request = ProcessSearch.request(token: 1 << 40 | 5, inode: 123_456, userID: 1000)
        let parsed = request.withUnsafeBytes { ProcessSearch.parseRequest($0) }
        #expect(parsed?.token == 1 << 40 | 5 && parsed?.inode == 123_456 && parsed?.userID == 1000)
        #expect([UInt8](repeating: 0, count: 15).withUnsafeBytes { ProcessSearch.parseRequest($0) } == nil)

        let process = ProcessTable.Process(id: 4242, path: "/usr/bin/curl", name: "curl")
        for sent in [process, ProcessTable.Process(id: 9, path: nil, name: "kworker"), nil] {
            let bytes = ProcessSearch.answerBytes(token: 3, process: sent)
            #expect(bytes.withUnsafeBytes { ProcessSearch.answer($0) } == ProcessSearch.Answer(token: 3, process: sent))
            // Every shorter or longer message is refused, never read past.
            for cut in 0 ..< bytes.count where sent != nil || cut < 16 {
                #expect(bytes.prefix(cut).withUnsafeBytes { ProcessSearch.answer(UnsafeRawBufferPointer($0)) } == nil, "\(cut)")
            }
            if sent != nil { #expect((bytes + [0]).withUnsafeBytes { ProcessSearch.answer($0) } == nil) }
        }
    }
}

extension SocketOwnerTests {
    @Test func anIPv6ConnectionIsFoundToo() throws {
        let loopback = SysIPAddress("::1")!
        try Self.connection(listener: loopback) { client, serverPort, clientPort in
            let entry = try #require(try SocketDiagnostics().tcpSocket(local: loopback, localPort: clientPort,
                                                                       remote: loopback, remotePort: serverPort))
            #expect(entry.inode == Self.inode(of: client.descriptor))
            #expect(entry.localAddress == loopback)
        }
    }
}

extension SocketOwnerTests {
    /// A dual-stack IPv6 socket talking to an IPv4 address sends IPv4
    /// packets: the flow's IPv4 addresses must still find it.
    @Test func aDualStackSocketIsFoundByItsIPv4Addresses() throws {
        let loopback = SysIPAddress("127.0.0.1")!
        try Self.connection(listener: loopback, family: .v6, target: SocketDiagnostics.mapped(loopback)) { client, serverPort, clientPort in
            let entry = try #require(try SocketDiagnostics().tcpSocket(local: loopback, localPort: clientPort,
                                                                       remote: loopback, remotePort: serverPort))
            #expect(entry.inode == Self.inode(of: client.descriptor))
        }
    }
}

extension ProcessSearchTests {
    /// A socket closed and another opened in its place (the same descriptor
    /// number, the new socket's inode) is found, and so is one on a new number.
    @Test func socketsOnReusedAndNewDescriptorsAreFound() throws {
        var table = ProcessTable()
        let first = try Socket(.udp, family: .v4)
        try first.bind(SocketAddress(SysIPAddress("127.0.0.1")!, port: 0))
        #expect(table.process(holdingSocket: SocketOwnerTests.inode(of: first.descriptor), userID: nil)?.id == getpid())
        _ = consume first
        // Most often the lowest free number, the one just closed (other tests
        // running beside this one may take it first).
        let again = try Socket(.udp, family: .v4)
        try again.bind(SocketAddress(SysIPAddress("127.0.0.1")!, port: 0))
        #expect(table.process(holdingSocket: SocketOwnerTests.inode(of: again.descriptor), userID: nil)?.id == getpid())
        let other = try Socket(.udp, family: .v4)
        try other.bind(SocketAddress(SysIPAddress("127.0.0.1")!, port: 0))
        #expect(table.process(holdingSocket: SocketOwnerTests.inode(of: other.descriptor), userID: nil)?.id == getpid())
    }
}
