/// Keys in the order they came, oldest first, for a table that lets its
/// oldest entry give way. Entries leave the table by other paths (accepted,
/// closed, taken back) without being looked for here: an entry is stale
/// once `isLive` says no, and `popOldest` skips it. The storage is kept to
/// a multiple of the live entries: a compaction when stale ones are most of
/// it, and the consumed front dropped once it is most of the array.
struct ArrivalOrder<Key: Hashable> {
    private var keys: [Key] = []
    private var head = 0

    /// Appends `key`. `liveCount` is how many entries the table holds
    /// (a bound on the live ones here); past twice that, stale entries are
    /// dropped (and repeats of a key kept once, at its first place).
    mutating func append(_ key: Key, liveCount: Int, isLive: (Key) -> Bool) {
        keys.append(key)
        guard keys.count - head > 2 * liveCount + 64 else { return }
        var seen = Set<Key>()
        keys = keys[head...].filter { isLive($0) && seen.insert($0).inserted }
        head = 0
    }

    /// The oldest key `isLive` accepts, taken out with the stale ones before
    /// it. The caller makes it stale (it leaves the table): a key appended
    /// again since the last compaction is still further on.
    mutating func popOldest(where isLive: (Key) -> Bool) -> Key? {
        defer {
            if head >= 1024, head * 2 >= keys.count {
                keys.removeFirst(head)
                head = 0
            }
        }
        while head < keys.count {
            let key = keys[head]
            head += 1
            if isLive(key) { return key }
        }
        return nil
    }
}
