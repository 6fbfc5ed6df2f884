internal import Capture
internal import Sys

/// The requests and connections that finished last, for `GET /requests`
/// (`sluice requests`): the flow log's lines, kept in memory so that a
/// running Sluice shows what it just did without having been started with
/// `--flow-log`. A ring: the oldest give way to new ones, and a reader that
/// fell behind is told how many it missed.
struct RecentRequests {
    enum Entry {
        /// An HTTP request, when its response ended (or it failed): HTTP mode's.
        case http(HTTPRequestRecord)
        /// A connection (TCP, UDP session, ping), when it ended.
        case connection(FlowRecord)

        /// The flow log's line for it.
        var json: String {
            switch self {
            case let .http(record): record.json
            case let .connection(record): record.json
            }
        }
    }

    /// What one look sees.
    struct Page {
        /// Oldest first, with their ids.
        var entries: [(id: UInt64, entry: Entry)]
        /// The id of the newest entry recorded so far; 0 before the first.
        var newest: UInt64
        /// Entries after the one asked from that the ring no longer holds.
        var missed: UInt64
        /// Entries after the page's last one that the limit left out.
        var more: Bool
        /// The ring's `instance`.
        var instance: String
    }

    /// 512 lines: a few seconds of a busy tunnel, a few hundred kilobytes
    /// of memory (a URL is at most 8 KiB, so at most 4 MiB).
    static let defaultCapacity = 512

    let capacity: Int
    private var storage: [Entry] = []
    /// Where the next entry goes once the ring is full: the oldest one's place.
    private var head = 0
    /// The id the next entry gets; the first is 1.
    private(set) var nextID: UInt64 = 1
    /// Names this ring (this Sluice) apart from any other that answers on the
    /// same socket later: ids start again at 1 there, and a follower that
    /// sees the name change starts again with them.
    let instance: String

    init(capacity: Int = defaultCapacity, instance: String = RecentRequests.freshInstance()) {
        precondition(capacity > 0, "a ring holds at least one entry")
        self.capacity = capacity
        self.instance = instance
    }

    /// Sixteen random hex digits.
    static func freshInstance() -> String {
        SystemRandom.bytes(8).map { String($0 >> 4, radix: 16) + String($0 & 15, radix: 16) }.joined()
    }

    var count: Int { storage.count }

    mutating func append(_ entry: Entry) {
        if storage.count < capacity {
            storage.append(entry)
        } else {
            storage[head] = entry
            head = head + 1 == capacity ? 0 : head + 1
        }
        nextID += 1
    }

    /// The id of the oldest entry held (`nextID` when none is).
    var oldestID: UInt64 { nextID - UInt64(storage.count) }

    /// Entries after id `after`, oldest first, at most `limit`; without
    /// `after`, the newest `limit`. An `after` beyond the newest (a reader
    /// of an earlier Sluice on the same socket) sees nothing, and `newest`
    /// tells it so.
    func page(after: UInt64?, limit: Int) -> Page {
        let newest = nextID - 1
        let limit = UInt64(max(limit, 0))
        let first: UInt64
        var missed: UInt64 = 0
        if let after {
            guard after < newest else { return Page(entries: [], newest: newest, missed: 0, more: false, instance: instance) }
            let wanted = after + 1
            missed = oldestID > wanted ? oldestID - wanted : 0
            first = max(wanted, oldestID)
        } else {
            first = nextID - min(limit, UInt64(storage.count))
        }
        let end = min(nextID, first + limit)
        var entries: [(id: UInt64, entry: Entry)] = []
        entries.reserveCapacity(Int(end - first))
        for id in first ..< end { entries.append((id, entry(id))) }
        return Page(entries: entries, newest: newest, missed: missed, more: end < nextID, instance: instance)
    }

    /// The entry with this id, which must be held.
    private func entry(_ id: UInt64) -> Entry {
        let offset = Int(id - oldestID)
        return storage[storage.count < capacity ? offset : (head + offset) % capacity]
    }
}

/// Where a loop's finished connections and HTTP requests go: the flow log
/// (`--flow-log`) and, while a control socket is open, the ring `GET
/// /requests` reads. The tunnel and `sluice proxy` both finish lines so.
protocol FinishedLines: AnyObject {
    var flowLog: FlowLogWriter? { get }
    var controlWatching: Bool { get }
    var recentRequests: RecentRequests { get set }
}

extension FinishedLines {
    /// Someone reads the lines: worth keeping records and counting bytes for them.
    var keepsLines: Bool { flowLog != nil || controlWatching }

    func finished(_ entry: RecentRequests.Entry) {
        switch entry {
        case let .http(record): flowLog?.write(record)
        case let .connection(record): flowLog?.write(record)
        }
        if controlWatching { recentRequests.append(entry) }
    }
}

extension Tunnel: FinishedLines {}
extension ProxyServer: FinishedLines {}
