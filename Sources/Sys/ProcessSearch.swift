// ProcessSearch exists so the event loop never walks /proc itself: finding
// the process that holds a socket costs a stat per descriptor of every
// process tried (about 3 µs each on these machines, so a millisecond or more
// for a program with hundreds of descriptors), and a loop that did that for
// each new flow would stall every other flow meanwhile. A thread of its own
// keeps a `ProcessTable` and answers requests over a socketpair, one
// message each way per lookup, in the order asked.
import CShim
import Glibc

public final class ProcessSearch {
    /// One answer: the request's token and what was found.
    public struct Answer: Sendable, Equatable {
        public var token: UInt64
        public var process: ProcessTable.Process?
    }

    /// The loop's end: non-blocking, readable when answers wait.
    public let descriptor: FileDescriptor
    private var worker: WorkerThread?

    /// `networkNamespace`: only processes in that namespace (its inode, as
    /// `ProcessTable.namespaceInode` gives it) are searched.
    public init(networkNamespace: UInt64?, root: String = "/proc") throws(Errno) {
        var ends: (Int32, Int32) = (-1, -1)
        _ = try withUnsafeMutableBytes(of: &ends) { (raw) throws(Errno) in
            try valueOrErrno {
                socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0,
                           raw.baseAddress!.assumingMemoryBound(to: Int32.self))
            }.get()
        }
        descriptor = FileDescriptor(rawValue: ends.0)
        try descriptor.setNonBlocking()
        let workerEnd = ends.1
        do {
            worker = try WorkerThread {
                Self.serve(workerEnd, table: ProcessTable(root: root, networkNamespace: networkNamespace))
            }
        } catch {
            close(workerEnd)
            throw error
        }
    }

    deinit {
        // Closing our end ends the worker's read loop; dropping it joins the thread.
        _ = Glibc.shutdown(descriptor.rawValue, Int32(SHUT_RDWR))
        _ = worker.take()
    }

    /// Asks for the holder of socket `inode` (owned by `userID`). False when
    /// the worker is too far behind to take it (its queue is full).
    public func submit(token: UInt64, inode: UInt32, userID: UInt32) -> Bool {
        var request = Self.request(token: token, inode: inode, userID: userID)
        // MSG_NOSIGNAL: a worker that is gone makes this fail, not kill Sluice with SIGPIPE.
        let sent = request.withUnsafeMutableBytes { send(descriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        return sent == Self.requestSize
    }

    /// The answers that have arrived, oldest first.
    public func answers() -> [Answer] {
        var result: [Answer] = []
        withUnsafeTemporaryAllocation(byteCount: Self.maximumAnswerSize, alignment: 8) { buffer in
            while true {
                let n = recv(descriptor.rawValue, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
                if n < 0, cshim_errno() == EINTR { continue }
                guard n > 0 else { break }
                if let answer = Self.answer(UnsafeRawBufferPointer(rebasing: buffer[0..<n])) { result.append(answer) }
            }
        }
        return result
    }

    // MARK: The messages: little-endian, fixed fields first

    static let requestSize = 16
    /// token 8, pid 4, name length 2, path length 2, then the name and path.
    static let answerHeaderSize = 16
    static let maximumTextLength = 4096
    static let maximumAnswerSize = answerHeaderSize + 2 * maximumTextLength

    static func request(token: UInt64, inode: UInt32, userID: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(requestSize)
        append(token, to: &bytes)
        append(inode, to: &bytes)
        append(userID, to: &bytes)
        return bytes
    }

    /// A request as the worker reads it; nil for a message of another size.
    static func parseRequest(_ bytes: UnsafeRawBufferPointer) -> (token: UInt64, inode: UInt32, userID: UInt32)? {
        guard bytes.count == requestSize else { return nil }
        return (UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self)),
                UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)),
                UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
    }

    /// An answer: pid 0 when nothing was found.
    static func answerBytes(token: UInt64, process: ProcessTable.Process?) -> [UInt8] {
        var bytes: [UInt8] = []
        append(token, to: &bytes)
        guard let process else {
            append(UInt32(0), to: &bytes)
            append(UInt32(0), to: &bytes)
            return bytes
        }
        let name = Array(process.name.utf8.prefix(maximumTextLength))
        let path = Array((process.path ?? "").utf8.prefix(maximumTextLength))
        append(UInt32(bitPattern: process.id), to: &bytes)
        append(UInt16(name.count), to: &bytes)
        append(UInt16(process.path == nil ? UInt16.max : UInt16(path.count)), to: &bytes)
        return bytes + name + path
    }

    /// Reads an answer, checking every length; nil for a malformed one.
    static func answer(_ bytes: UnsafeRawBufferPointer) -> Answer? {
        guard bytes.count >= answerHeaderSize else { return nil }
        let token = UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self))
        let pid = Int32(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        guard pid > 0 else { return Answer(token: token, process: nil) }
        let nameLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt16.self)))
        let rawPathLength = UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 14, as: UInt16.self))
        let pathLength = rawPathLength == UInt16.max ? 0 : Int(rawPathLength)
        guard bytes.count == answerHeaderSize + nameLength + pathLength else { return nil }
        let name = String(decoding: bytes[answerHeaderSize ..< answerHeaderSize + nameLength], as: UTF8.self)
        let path = rawPathLength == UInt16.max ? nil
            : String(decoding: bytes[answerHeaderSize + nameLength ..< answerHeaderSize + nameLength + pathLength], as: UTF8.self)
        return Answer(token: token, process: ProcessTable.Process(id: pid, path: path, name: name))
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// The worker: one request in, one answer out, until the loop's end closes.
    private static func serve(_ descriptor: Int32, table: ProcessTable) {
        var table = table
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n < 0, cshim_errno() == EINTR { continue }
            guard n > 0 else { break }
            guard let request = buffer.withUnsafeBytes({ parseRequest(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }) else { continue }
            let process = table.process(holdingSocket: request.inode, userID: request.userID)
            var answer = answerBytes(token: request.token, process: process)
            var sent = -1
            repeat {
                sent = answer.withUnsafeMutableBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            } while sent < 0 && cshim_errno() == EINTR
            if sent < 0 { break }
        }
        close(descriptor)
    }
}
