import Foundation
import Sys
import TestSupport
import Testing

/// External tools the capture tests check files with. tools/setup installs them.
enum Tool {
    static func has(_ name: String) -> Bool {
        ["/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/bin/", "/sbin/"].contains {
            FileManager.default.isExecutableFile(atPath: $0 + name)
        }
    }

    static let hasTshark = has("tshark")
    static let tsharkMissing: Comment = "tshark is not installed (tools/setup installs it): skipping"

    /// Runs a command to completion (bounded) and returns its output (stdout and stderr).
    @discardableResult
    static func run(_ command: [String], timeout: Double = 60) throws -> String {
        try TestNetwork("capt").run(command, timeout: timeout).output
    }

    /// tshark's fields, one array per frame. tshark's "Running as user root"
    /// banner shares the output, so only rows with the right number of
    /// `|`-separated columns count.
    static func tsharkFields(_ file: String, _ fields: [String], filter: String? = nil) throws -> [[String]] {
        var command = ["tshark", "-n", "-r", file, "-T", "fields"]
        for field in fields { command += ["-e", field] }
        if let filter { command += ["-Y", filter] }
        command += ["-E", "separator=|", "-E", "header=n"]
        let output = try run(command)
        return output.split(separator: "\n").compactMap { line in
            if line.hasPrefix("Running as user") { return nil }
            let columns = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            return columns.count == fields.count ? columns : nil
        }
    }

    static func tsharkFrameCount(_ file: String, filter: String? = nil) throws -> Int {
        try tsharkFields(file, ["frame.number"], filter: filter).count
    }
}

/// A directory for one test's files, removed at the end.
final class ScratchDirectory {
    let path: String
    init(_ label: String = #function) {
        let name = label.filter { $0.isLetter || $0.isNumber }
        path = NSTemporaryDirectory() + "sluice-capture-\(name)-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
}

func fileBytes(_ path: String) -> [UInt8] {
    FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
}

func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? -1
}

func fileExists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

/// Hand-made IP datagrams for the capture tests, with real checksums.
enum TestPacket {
    enum Transport { case tcp, udp }

    /// An IPv4 datagram whose identification field carries `id`, so a test can
    /// tell which recorded packet a frame is.
    static func ipv4(_ transport: Transport, id: UInt16, sourcePort: UInt16 = 40000, destinationPort: UInt16,
                     payload: Int, source: [UInt8] = [10, 0, 0, 1], destination: [UInt8] = [10, 0, 0, 2]) -> [UInt8] {
        let proto: UInt8 = transport == .tcp ? 6 : 17
        let segment = self.segment(transport, sourcePort: sourcePort, destinationPort: destinationPort, payload: payload, fill: UInt8(truncatingIfNeeded: id))
        let total = 20 + segment.count
        var header: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), UInt8(id >> 8), UInt8(id & 0xff), 0x40, 0, 64, proto, 0, 0]
        header += source + destination
        let sum = checksum(header)
        header[10] = UInt8(sum >> 8)
        header[11] = UInt8(sum & 0xff)
        var packet = header + segment
        let pseudo = source + destination + [0, proto, UInt8(segment.count >> 8), UInt8(segment.count & 0xff)]
        fillTransportChecksum(&packet, at: 20, transport, pseudo: pseudo)
        return packet
    }

    /// An IPv6 datagram; the low 16 bits of the flow label carry `id`.
    /// A TCP/IPv4 packet between the app 10.0.0.1:40000+n and 10.0.0.2:80, with `flags`,
    /// sent by the app (inbound to the TUN reader) or by the remote side.
    static func flowSegment(_ n: UInt16, fromApp: Bool, flags: UInt8 = 0x10, id: UInt16 = 0, payload: Int = 10) -> [UInt8] {
        var packet = fromApp
            ? ipv4(.tcp, id: id, sourcePort: 40000 + n, destinationPort: 80, payload: payload)
            : ipv4(.tcp, id: id, sourcePort: 80, destinationPort: 40000 + n, payload: payload,
                   source: [10, 0, 0, 2], destination: [10, 0, 0, 1])
        packet[20 + 13] = flags
        return packet
    }

    static func ipv6(_ transport: Transport, id: UInt16, sourcePort: UInt16 = 40000, destinationPort: UInt16, payload: Int) -> [UInt8] {
        let proto: UInt8 = transport == .tcp ? 6 : 17
        let segment = self.segment(transport, sourcePort: sourcePort, destinationPort: destinationPort, payload: payload, fill: UInt8(truncatingIfNeeded: id))
        let source: [UInt8] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        let destination: [UInt8] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]
        var packet: [UInt8] = [0x60, 0, UInt8(id >> 8), UInt8(id & 0xff), UInt8(segment.count >> 8), UInt8(segment.count & 0xff), proto, 64]
        packet += source + destination + segment
        let length = UInt32(segment.count)
        var pseudo = source + destination
        pseudo += [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), 0, 0, 0, proto]
        fillTransportChecksum(&packet, at: 40, transport, pseudo: pseudo)
        return packet
    }

    private static func segment(_ transport: Transport, sourcePort: UInt16, destinationPort: UInt16, payload: Int, fill: UInt8) -> [UInt8] {
        let data = (0 ..< payload).map { UInt8(truncatingIfNeeded: Int(fill) &+ $0) }
        let ports = [UInt8(sourcePort >> 8), UInt8(sourcePort & 0xff), UInt8(destinationPort >> 8), UInt8(destinationPort & 0xff)]
        switch transport {
        case .tcp:
            return ports + [0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0] + data
        case .udp:
            let length = 8 + payload
            return ports + [UInt8(length >> 8), UInt8(length & 0xff), 0, 0] + data
        }
    }

    private static func fillTransportChecksum(_ packet: inout [UInt8], at offset: Int, _ transport: Transport, pseudo: [UInt8]) {
        let at = offset + (transport == .tcp ? 16 : 6)
        var sum = checksum(pseudo + Array(packet[offset...]))
        if transport == .udp && sum == 0 { sum = 0xffff }
        packet[at] = UInt8(sum >> 8)
        packet[at + 1] = UInt8(sum & 0xff)
    }

    static func checksum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var i = 0
        while i + 1 < bytes.count {
            sum += UInt32(bytes[i]) << 8 | UInt32(bytes[i + 1])
            i += 2
        }
        if i < bytes.count { sum += UInt32(bytes[i]) << 8 }
        while sum >> 16 != 0 { sum = (sum & 0xffff) + (sum >> 16) }
        return ~UInt16(sum)
    }

    /// A mix for the tshark tests: `kind` cycles through IPv4/IPv6 and TCP/UDP on
    /// ports 80, 443 and 8080, so `tcp port 80` keeps exactly the `.tcp80` ones.
    enum Kind: CaseIterable { case v4tcp80, v4udp80, v6tcp80, v6tcp443, v4tcp8080, v6udp53 }

    static func mixed(_ index: Int, payload: Int) -> (bytes: [UInt8], kind: Kind) {
        let kind = Kind.allCases[index % Kind.allCases.count]
        let id = UInt16(truncatingIfNeeded: index)
        switch kind {
        case .v4tcp80: return (ipv4(.tcp, id: id, destinationPort: 80, payload: payload), kind)
        case .v4udp80: return (ipv4(.udp, id: id, destinationPort: 80, payload: payload), kind)
        case .v6tcp80: return (ipv6(.tcp, id: id, sourcePort: 80, destinationPort: 40000, payload: payload), kind)
        case .v6tcp443: return (ipv6(.tcp, id: id, destinationPort: 443, payload: payload), kind)
        case .v4tcp8080: return (ipv4(.tcp, id: id, destinationPort: 8080, payload: payload), kind)
        case .v6udp53: return (ipv6(.udp, id: id, destinationPort: 53, payload: payload), kind)
        }
    }
}

/// A gate a test keeps closed to stall the capture writer, then opens.
final class WriterGate: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false

    func open() {
        lock.lock()
        isOpen = true
        lock.unlock()
    }

    /// Blocks until opened; bounded at 20 s so a broken test cannot hang.
    func pass() {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            lock.lock()
            let open = isOpen
            lock.unlock()
            if open { return }
            usleep(1000)
        }
    }
}
