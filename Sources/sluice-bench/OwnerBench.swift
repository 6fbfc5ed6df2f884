// The owner-lookup benchmark: what a PROCESS-NAME, PROCESS-PATH or UID rule
// costs each new flow. A flow's socket is found with sock_diag (TCP by its
// addresses, UDP by a dump of the family's sockets) and its process by a walk
// of /proc; here the sockets are this process's own, over loopback.
import Glibc
import Sys

func benchOwners(rounds: Int, connections: Int) {
    // First, while this process holds nothing else.
    benchChurn(rounds: rounds)
    let loopback = SysIPAddress("127.0.0.1")!
    guard let server = try? Socket(.tcp, family: .v4), (try? server.bind(SocketAddress(loopback, port: 0))) != nil,
          (try? server.listen(backlog: Int32(connections))) != nil, let serverAddress = server.localAddress,
          let diagnostics = try? SocketDiagnostics() else {
        print("owners: cannot set up loopback sockets or a sock_diag socket")
        return
    }
    var clients: [HeldSocket] = []
    var ports: [UInt16] = []
    var inodes: [UInt32] = []
    for _ in 0 ..< connections {
        guard let client = try? Socket(.tcp, family: .v4), (try? client.connect(to: serverAddress)) != nil,
              let local = client.localAddress else { break }
        var status = stat()
        _ = fstat(client.descriptor.rawValue, &status)
        ports.append(local.port)
        inodes.append(UInt32(truncatingIfNeeded: status.st_ino))
        clients.append(HeldSocket(client))
    }
    guard let udp = try? Socket(.udp, family: .v4), (try? udp.bind(SocketAddress(loopback, port: 0))) != nil,
          let udpPort = udp.localAddress?.port else {
        print("owners: cannot bind a UDP socket")
        return
    }
    let processes = Files.names(in: "/proc").filter { Int($0) != nil }.count
    print("owners: \(ports.count) TCP connections of this process over loopback; \(processes) processes in /proc; medians of \(rounds) rounds, µs per lookup")

    let namespace = ProcessTable.namespaceInode("/proc/self/ns/net")
    guard let search = try? ProcessSearch(networkNamespace: namespace) else {
        print("owners: cannot start the search thread")
        return
    }
    var tcp: [Double] = [], udpDump: [Double] = [], warm: [Double] = [], cold: [Double] = [], coldHere: [Double] = [], roundTrip: [Double] = []
    for _ in 0 ..< rounds {
        var found = 0
        var start = ContinuousClock.now
        for port in ports where (try? diagnostics.tcpSocket(local: loopback, localPort: port, remote: loopback, remotePort: serverAddress.port)) != nil {
            found += 1
        }
        tcp.append((ContinuousClock.now - start).nanosecondsDouble / 1000 / Double(max(ports.count, 1)))
        start = ContinuousClock.now
        for _ in 0 ..< 64 where (try? diagnostics.udpSocket(family: .v4, local: loopback, localPort: udpPort)) != nil { found += 1 }
        udpDump.append((ContinuousClock.now - start).nanosecondsDouble / 1000 / 64)
        // Warm: the process that opened the last flow opens this one too.
        var table = ProcessTable()
        _ = table.process(holdingSocket: inodes[0], userID: getuid())
        start = ContinuousClock.now
        for inode in inodes where table.process(holdingSocket: inode, userID: getuid()) != nil { found += 1 }
        warm.append((ContinuousClock.now - start).nanosecondsDouble / 1000 / Double(max(inodes.count, 1)))
        // Cold: a program not seen before, found by walking /proc.
        let sample = Array(inodes.prefix(16))
        start = ContinuousClock.now
        for inode in sample {
            var fresh = ProcessTable()
            if fresh.process(holdingSocket: inode, userID: getuid()) != nil { found += 1 }
        }
        cold.append((ContinuousClock.now - start).nanosecondsDouble / 1000 / Double(max(sample.count, 1)))
        // Cold, as the tunnel searches: this namespace only, the newest processes first.
        start = ContinuousClock.now
        for inode in sample {
            var fresh = ProcessTable(networkNamespace: namespace)
            if fresh.process(holdingSocket: inode, userID: getuid()) != nil { found += 1 }
        }
        coldHere.append((ContinuousClock.now - start).nanosecondsDouble / 1000 / Double(max(sample.count, 1)))
        // Through the search thread, as the loop asks: one request, one answer.
        start = ContinuousClock.now
        for (token, inode) in sample.enumerated() {
            guard search.submit(token: UInt64(token), inode: inode, userID: getuid()) else { break }
            var answered = false
            while !answered { answered = !search.answers().isEmpty }
            found += 1
        }
        roundTrip.append((ContinuousClock.now - start).nanosecondsDouble / 1000 / Double(max(sample.count, 1)))
        if found != ports.count + 64 + inodes.count + 3 * sample.count { print("owners: only \(found) lookups succeeded") }
    }
    print("  TCP socket by its addresses (sock_diag):          \(format1(median(tcp)))")
    print("  UDP socket by its port (a dump of the family):    \(format1(median(udpDump)))")
    print("  its process, the last flow's program (warm):       \(format1(median(warm)))  (\(Files.names(in: "/proc/self/fd").count) descriptors here)")
    print("  its process, a program not seen before (/proc):   \(format1(median(cold)))")
    print("  the same, this namespace only, newest first:      \(format1(median(coldHere)))")
    print("  through the search thread (the tunnel's way):     \(format1(median(roundTrip)))")
    withExtendedLifetime(clients) {}
    _ = consume udp
}

/// Keeps a noncopyable socket open while it sits in an array.
final class HeldSocket {
    let socket: Socket
    init(_ socket: consuming Socket) { self.socket = socket }
}

/// A program with many files open and a few connections that come and go
/// (a browser, a package manager): each new socket takes the number of one
/// just closed. The walk looks at the descriptors that held sockets first.
func benchChurn(rounds: Int) {
    var files: [Int32] = []
    for _ in 0 ..< 1000 { files.append(open("/dev/null", O_RDONLY | O_CLOEXEC)) }
    defer { for file in files { close(file) } }
    let loopback = SysIPAddress("127.0.0.1")!
    var sockets: [HeldSocket?] = []
    for _ in 0 ..< 8 {
        guard let socket = try? Socket(.udp, family: .v4), (try? socket.bind(SocketAddress(loopback, port: 0))) != nil else { return }
        sockets.append(HeldSocket(socket))
    }
    func inode(_ held: HeldSocket?) -> UInt32 {
        var status = stat()
        _ = fstat(held?.socket.descriptor.rawValue ?? -1, &status)
        return UInt32(truncatingIfNeeded: status.st_ino)
    }
    var table = ProcessTable()
    for held in sockets { _ = table.process(holdingSocket: inode(held), userID: getuid()) }
    var times: [Double] = []
    for _ in 0 ..< rounds {
        var total = 0.0
        for index in sockets.indices {
            // A connection closes and a new one takes its number.
            let number = sockets[index]?.socket.descriptor.rawValue
            sockets[index] = nil
            sockets[index] = HeldSocket(try! Socket(.udp, family: .v4))
            if sockets[index]?.socket.descriptor.rawValue != number { print("owners: churn: \(String(describing: number)) became \(String(describing: sockets[index]?.socket.descriptor.rawValue))") }
            let start = ContinuousClock.now
            if table.process(holdingSocket: inode(sockets[index]), userID: getuid()) == nil { print("owners: a churned socket was not found") }
            total += (ContinuousClock.now - start).nanosecondsDouble / 1000
        }
        times.append(total / Double(sockets.count))
    }
    print("owners: a program with \(Files.names(in: "/proc/self/fd").count) descriptors, 8 of them sockets; µs to find a new socket on a closed one's number: \(format1(median(times)))")
}
