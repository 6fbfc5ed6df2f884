// ProcessTable exists to name the process that holds a socket: Linux keeps
// no map from a socket to its holders, so the way is to look through
// /proc/PID/fd, where each descriptor stats to the inode of what it holds.
// The walk is bounded, and starts with the processes that held the last
// sockets asked about, since one program usually opens many connections.
import CShim
import Glibc

public struct ProcessTable: Sendable {
    public struct Process: Sendable, Equatable {
        public var id: Int32
        /// /proc/PID/exe, without the " (deleted)" the kernel adds for a
        /// replaced file; nil when unreadable.
        public var path: String?
        /// The executable's file name, or /proc/PID/comm when the path is unreadable.
        public var name: String

        public init(id: Int32, path: String?, name: String) { self.id = id; self.path = path; self.name = name }
    }

    /// How many processes are tried first, most recent first.
    static let recentLimit = 8
    /// Descriptors looked at in one search, over all processes: a bound on
    /// the time a search may take (a stat each), far above what a machine
    /// with a few hundred processes holds.
    public static let maximumDescriptors = 200_000

    private var recent: [Int32] = []
    private let root: String
    private let networkNamespace: UInt64?
    /// Whether each process seen is in `networkNamespace`.
    private var namespaceMembers: [Int32: Bool] = [:]
    /// What the last look through a recent process's descriptors found.
    private var seen: [Int32: Descriptors] = [:]

    /// One process's descriptors as last seen: its sockets (in order, and by
    /// inode) and the rest. A search tries, in order: the descriptor that
    /// held the socket asked about (a burst of connections: one look through
    /// the program saw them all), its other sockets (a program that opens
    /// connections reuses the numbers of those it closed), numbers not seen
    /// before, and last its files and pipes, often most of its descriptors.
    struct Descriptors {
        var sockets: [Int32] = []
        var inodeOf: [Int32: UInt32] = [:]
        var byInode: [UInt32: Int32] = [:]
        var others: Set<Int32> = []

        mutating func noteSocket(_ descriptor: Int32, _ inode: UInt32) {
            if inodeOf.updateValue(inode, forKey: descriptor) == nil { sockets.append(descriptor) }
            byInode[inode] = descriptor
        }

        /// Records what `descriptor` was found to hold; true if it is socket `inode`.
        mutating func note(_ descriptor: Int32, _ held: Held, seeking inode: UInt32) -> Bool {
            switch held {
            case let .socket(found):
                noteSocket(descriptor, found)
                return found == inode
            case .other:
                others.insert(descriptor)
                return false
            case .gone:
                return false
            }
        }
    }

    /// `root`: where proc is mounted (a test may point elsewhere).
    /// `networkNamespace`: only processes in that namespace are searched
    /// (`namespaceInode`), which spares the walk the descriptors of every
    /// process elsewhere; nil searches them all.
    public init(root: String = "/proc", networkNamespace: UInt64? = nil) {
        self.root = root
        self.networkNamespace = networkNamespace
    }

    /// The inode that names a network namespace: of /proc/PID/ns/net, of
    /// /run/netns/NAME, or of an open handle to one.
    public static func namespaceInode(_ path: String) -> UInt64? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return UInt64(status.st_ino)
    }

    /// The process holding socket `inode`. Processes running as `userID` are
    /// tried before the others (a socket's owner is its creator's uid), the
    /// newest first (a new flow is most often a new program's). Nil when none
    /// does (it has exited) or the bound was reached.
    public mutating func process(holdingSocket inode: UInt32, userID: UInt32?) -> Process? {
        var budget = Self.maximumDescriptors
        for pid in recent where holds(pid, inode, budget: &budget) {
            return found(pid)
        }
        let pids = processIDs()
        if networkNamespace != nil { forgetNamespacesExcept(pids) }
        var others: [Int32] = []
        for pid in pids.reversed() where !recent.contains(pid) {
            if let networkNamespace, !isInNamespace(pid, networkNamespace) { continue }
            if let userID, owner(of: pid) != userID {
                others.append(pid)
                continue
            }
            if holds(pid, inode, budget: &budget) { return found(pid) }
            if budget <= 0 { return nil }
        }
        for pid in others where holds(pid, inode, budget: &budget) {
            return found(pid)
        }
        return nil
    }

    /// Every process in /proc, in its order (ascending).
    private func processIDs() -> [Int32] {
        guard let directory = opendir(root) else { return [] }
        defer { closedir(directory) }
        var pids: [Int32] = []
        while let entry = readdir(directory) {
            if let pid = Self.processID(entry) { pids.append(pid) }
        }
        return pids
    }

    /// Whether `pid` is in namespace `namespace`. Reading /proc/PID/ns/net
    /// costs more than any other step per process (4–8 µs here), and a process
    /// rarely changes namespace, so the answer is kept while the pid lives.
    /// (One that does, as `ip netns exec` does between fork and exec, is
    /// asked about before it moves only if a search runs in that instant.)
    private mutating func isInNamespace(_ pid: Int32, _ namespace: UInt64) -> Bool {
        if let known = namespaceMembers[pid] { return known }
        let member = Files.readLink("\(root)/\(pid)/ns/net").flatMap(Self.namespaceNumber) == namespace
        namespaceMembers[pid] = member
        return member
    }

    /// Keeps only the pids still in /proc, so a pid used again later is asked anew.
    private mutating func forgetNamespacesExcept(_ pids: [Int32]) {
        guard !namespaceMembers.isEmpty else { return }
        let alive = Set(pids)
        namespaceMembers = namespaceMembers.filter { alive.contains($0.key) }
    }

    /// "net:[4026531840]" → 4026531840.
    static func namespaceNumber(_ link: String) -> UInt64? {
        guard link.hasPrefix("net:["), link.hasSuffix("]") else { return nil }
        return UInt64(link.dropFirst(5).dropLast())
    }

    /// The process `pid`, as `process(holdingSocket:)` describes it.
    public func describe(_ pid: Int32) -> Process {
        let path = Files.readLink("\(root)/\(pid)/exe").map(Self.withoutDeleted)
        let name: String
        if let path, let slash = path.lastIndex(of: "/") {
            name = String(path[path.index(after: slash)...])
        } else {
            var comm = Files.read("\(root)/\(pid)/comm", limit: 64) ?? Array("?".utf8)
            if comm.last == UInt8(ascii: "\n") { comm.removeLast() }
            name = String(decoding: comm, as: UTF8.self)
        }
        return Process(id: pid, path: path, name: name)
    }

    private mutating func found(_ pid: Int32) -> Process {
        recent.removeAll { $0 == pid }
        recent.insert(pid, at: 0)
        if recent.count > Self.recentLimit { seen[recent.removeLast()] = nil }
        return describe(pid)
    }

    /// Whether one of `pid`'s descriptors is socket `inode`, looked for in
    /// `Descriptors`' order.
    private mutating func holds(_ pid: Int32, _ inode: UInt32, budget: inout Int) -> Bool {
        guard budget > 0 else { return false }
        let folder = open("\(root)/\(pid)/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0, let directory = fdopendir(folder) else {
            if folder >= 0 { close(folder) }
            return false
        }
        defer { closedir(directory) }
        let last = seen[pid] ?? Descriptors()
        // The descriptor that held it when last seen.
        if let descriptor = last.byInode[inode] {
            budget -= 1
            if case .socket(inode) = Self.look(in: folder, "\(descriptor)") { return true }
        }
        var now = Descriptors()
        // Its other sockets, by number, without reading the folder: a program
        // that opens connections gives a new one the number of one it closed.
        for (index, descriptor) in last.sockets.enumerated() {
            guard budget > 0 else { break }
            budget -= 1
            switch Self.look(in: folder, "\(descriptor)") {
            case let .socket(held):
                now.noteSocket(descriptor, held)
                guard held == inode else { continue }
                // The rest keep what was known of them.
                for rest in last.sockets[(index + 1)...] { now.noteSocket(rest, last.inodeOf[rest] ?? 0) }
                now.others.formUnion(last.others)
                seen[pid] = now
                return true
            case .other:
                now.others.insert(descriptor)
            case .gone:
                continue
            }
        }
        // Then every number not seen before, to the end (a burst of new
        // connections is then found by the next searches at once), and last
        // the files and pipes, often most of a program's descriptors.
        var files: [Int32] = []
        var holds = false
        while budget > 0, let entry = readdir(directory) {
            guard let descriptor = Self.number(entry), last.inodeOf[descriptor] == nil else { continue }
            if last.others.contains(descriptor) {
                files.append(descriptor)
                continue
            }
            budget -= 1
            if now.note(descriptor, Self.look(in: folder, "\(descriptor)"), seeking: inode) { holds = true }
        }
        for (index, descriptor) in files.enumerated() {
            guard !holds, budget > 0 else {
                now.others.formUnion(files[index...])
                break
            }
            budget -= 1
            if now.note(descriptor, Self.look(in: folder, "\(descriptor)"), seeking: inode) { holds = true }
        }
        // Kept for the processes tried first (a found one becomes one).
        if holds || recent.contains(pid) { seen[pid] = now }
        return holds
    }

    enum Held: Equatable { case socket(UInt32), other, gone }

    /// What descriptor `name` (in /proc/PID/fd, open as `folder`) holds.
    /// stat follows the magic link to it: for a socket, sockfs's inode, the
    /// number sock_diag reports.
    private static func look(in folder: Int32, _ name: UnsafePointer<CChar>) -> Held {
        var status = stat()
        guard fstatat(folder, name, &status, 0) == 0 else { return .gone }
        guard status.st_mode & S_IFMT == S_IFSOCK else { return .other }
        return .socket(UInt32(truncatingIfNeeded: status.st_ino))
    }

    /// The uid /proc gives the process's directory (its effective uid).
    private func owner(of pid: Int32) -> UInt32? {
        var status = stat()
        guard stat("\(root)/\(pid)", &status) == 0 else { return nil }
        return status.st_uid
    }

    private static func processID(_ entry: UnsafeMutablePointer<dirent>) -> Int32? { number(entry) }

    /// A directory entry's name as a number (a pid, a descriptor), or nil.
    private static func number(_ entry: UnsafeMutablePointer<dirent>) -> Int32? {
        var value: Int32 = 0
        var digits = 0
        let isNumber = withUnsafeBytes(of: entry.pointee.d_name) { bytes -> Bool in
            for byte in bytes {
                if byte == 0 { break }
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 9 else { return false }
                value = value * 10 + Int32(byte - UInt8(ascii: "0"))
                digits += 1
            }
            return digits > 0
        }
        return isNumber ? value : nil
    }

    static func withoutDeleted(_ path: String) -> String {
        path.hasSuffix(" (deleted)") ? String(path.dropLast(" (deleted)".count)) : path
    }
}
