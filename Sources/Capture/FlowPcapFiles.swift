// FlowPcapFiles exists for `--pcap-per-flow DIR`: one savefile per flow, so a
// user debugging one connection opens one small file instead of filtering a
// big one. It runs on the capture writer's thread, after the BPF filter, and
// sorts each record by its flow from the IP and transport headers alone (the
// record may be cut to snaplen, so nothing past the ports is read).
//
// A flow is the app's address and port, the remote address and port, and the
// protocol, the same both ways: the record's direction says which side is the
// app's. ICMP echo uses its identifier as the app's port. Files are named
// `NNNNNN-PROTO-APP.PORT-REMOTE.PORT.pcap`, numbered in the order flows are
// first seen. A file is closed when its TCP flow has ended (a RST, or FINs both
// ways), after `idleSeconds` without a packet, or when more than `maximumOpen`
// files are open (the least recently written first); a later packet of a
// closed flow opens a new file with the next number.
internal import Sys
internal import Wire

final class FlowPcapFiles {
    typealias Key = CaptureFlow

    final class Entry {
        let file: DirectPcapFile
        var lastWrite: UInt64
        var finFromApp = false
        var finFromRemote = false
        init(file: DirectPcapFile, lastWrite: UInt64) {
            self.file = file
            self.lastWrite = lastWrite
        }
    }

    let directory: String
    let snaplen: Int
    let maximumOpen: Int
    let idleNanoseconds: UInt64
    private var open: [Key: Entry] = [:]
    private(set) var filesOpened = 0
    /// Bytes of each file's buffer: small, since many can be open at once.
    static let bufferSize = 16 << 10

    init(directory: String, snaplen: Int, maximumOpen: Int = 256, idleSeconds: Int = 30) throws(CaptureError) {
        // The directory must exist now: a typo fails at start-up, not on the writer thread.
        guard Files.kind(of: directory) == .directory else {
            throw .cannotOpen(path: directory, reason: "not a directory (create it first)")
        }
        // And writable: a read-only one failed only on the writer thread, said in the exit summary alone.
        let probe = directory + "/.sluice-write-test-\(ProcessControl.currentID)"
        do { try Files.write("", to: probe) } catch {
            throw .cannotOpen(path: directory, reason: "cannot create files in it: \(error)")
        }
        Files.remove(probe)
        self.directory = directory
        self.snaplen = snaplen
        self.maximumOpen = maximumOpen
        idleNanoseconds = UInt64(idleSeconds) * 1_000_000_000
    }

    var openCount: Int { open.count }

    /// The record's flow, or nil for bytes that are not IPv4 or IPv6.
    static func key(of bytes: UnsafeRawBufferPointer, outbound: Bool) -> (Key, tcpFlags: UInt8)? {
        guard let first = bytes.first else { return nil }
        var transport: UInt8
        var source: IPAddress, destination: IPAddress
        var payload: Int
        var fragmentTail = false
        switch first >> 4 {
        case 4:
            guard bytes.count >= 20 else { return nil }
            payload = Int(first & 0x0f) * 4
            transport = bytes[9]
            source = .v4(IPv4Address(load32(bytes, 12)))
            destination = .v4(IPv4Address(load32(bytes, 16)))
            fragmentTail = (UInt16(bytes[6] & 0x1f) << 8 | UInt16(bytes[7])) != 0
        case 6:
            guard bytes.count >= 40 else { return nil }
            payload = 40
            transport = bytes[6]
            source = .v6(IPv6Address(high: load64(bytes, 8), low: load64(bytes, 16)))
            destination = .v6(IPv6Address(high: load64(bytes, 24), low: load64(bytes, 32)))
        default:
            return nil
        }
        var sourcePort: UInt16 = 0, destinationPort: UInt16 = 0
        var flags: UInt8 = 0
        if !fragmentTail, payload + 4 <= bytes.count {
            switch transport {
            case 6, 17:
                sourcePort = UInt16(bytes[payload]) << 8 | UInt16(bytes[payload + 1])
                destinationPort = UInt16(bytes[payload + 2]) << 8 | UInt16(bytes[payload + 3])
                if transport == 6, payload + 14 <= bytes.count { flags = bytes[payload + 13] }
            case 1, 58:
                // Echo request/reply (8/0, 128/129): the identifier pairs them.
                let type = payload < bytes.count ? bytes[payload] : 255
                if payload + 6 <= bytes.count, type == 0 || type == 8 || type == 128 || type == 129 {
                    let identifier = UInt16(bytes[payload + 4]) << 8 | UInt16(bytes[payload + 5])
                    sourcePort = identifier
                    destinationPort = identifier
                }
            default:
                break
            }
        }
        let key = outbound
            ? Key(transport: transport, app: destination, appPort: destinationPort, remote: source, remotePort: sourcePort)
            : Key(transport: transport, app: source, appPort: sourcePort, remote: destination, remotePort: destinationPort)
        return (key, flags)
    }

    /// Appends the record to its flow's file, opening one if needed.
    func write(_ bytes: UnsafeRawBufferPointer, originalLength: Int, outbound: Bool, timestamp: UInt64) throws(CaptureError) {
        guard let (key, flags) = Self.key(of: bytes, outbound: outbound) else { return }
        let entry: Entry
        if let existing = open[key] {
            entry = existing
        } else {
            if open.count >= maximumOpen { try closeLeastRecent() }
            filesOpened += 1
            let file = try DirectPcapFile(path: path(for: key, number: filesOpened), snaplen: snaplen,
                                          direct: false, bufferSize: Self.bufferSize)
            entry = Entry(file: file, lastWrite: timestamp)
            open[key] = entry
        }
        try entry.file.write(bytes, originalLength: originalLength, timestamp: timestamp)
        entry.lastWrite = timestamp
        guard key.transport == 6 else { return }
        let fin: UInt8 = 0x01, rst: UInt8 = 0x04
        if flags & fin != 0 {
            if outbound { entry.finFromRemote = true } else { entry.finFromApp = true }
        }
        if flags & rst != 0 || (entry.finFromApp && entry.finFromRemote && flags & fin == 0) {
            // A RST ends the flow; after FINs both ways, the last ACK does.
            open[key] = nil
            try entry.file.close()
        }
    }

    /// Writes every open file's buffer out, and closes the files idle for too long.
    func flush(now: UInt64) throws(CaptureError) {
        var idle: [Key] = []
        for (key, entry) in open {
            if now > entry.lastWrite, now - entry.lastWrite >= idleNanoseconds { idle.append(key) } else { try entry.file.flush() }
        }
        for key in idle {
            if let entry = open.removeValue(forKey: key) { try entry.file.close() }
        }
    }

    func close() throws(CaptureError) {
        let entries = open.values
        open.removeAll()
        var failure: CaptureError?
        for entry in entries {
            do { try entry.file.close() } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    private func closeLeastRecent() throws(CaptureError) {
        guard let (key, entry) = open.min(by: { $0.value.lastWrite < $1.value.lastWrite }) else { return }
        open[key] = nil
        try entry.file.close()
    }

    func path(for key: Key, number: Int) -> String {
        let proto: String
        switch key.transport {
        case 6: proto = "tcp"
        case 17: proto = "udp"
        case 1: proto = "icmp"
        case 58: proto = "icmp6"
        default: proto = "ip\(key.transport)"
        }
        let digits = String(number)
        let padded = String(repeating: "0", count: max(0, 6 - digits.count)) + digits
        return "\(directory)/\(padded)-\(proto)-\(key.app).\(key.appPort)-\(key.remote).\(key.remotePort).pcap"
    }

    private static func load32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        (0 ..< 4).reduce(0) { $0 << 8 | UInt32(bytes[offset + $1]) }
    }

    private static func load64(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
        (0 ..< 8).reduce(0) { $0 << 8 | UInt64(bytes[offset + $1]) }
    }
}
