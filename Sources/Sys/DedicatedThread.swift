// DedicatedThread exists because a network namespace belongs to a thread,
// not to a process: setns(2) and unshare(CLONE_NEWNET) change only the
// calling thread. Doing them on a fresh pthread that is joined before
// returning leaves the caller's thread (and the Swift runtime's pool
// threads) in the namespace they started in.
import Glibc

private final class ThreadBody {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

enum DedicatedThread {
    /// Runs `body` on a new pthread and waits for it to finish. The closure
    /// never outlives this call, so it need not escape or be Sendable: the
    /// caller is blocked while it runs.
    static func run(_ body: () -> Void) throws(Errno) {
        try withoutActuallyEscaping(body) { (escapable) throws(Errno) in
            let context = Unmanaged.passRetained(ThreadBody(escapable)).toOpaque()
            var thread = pthread_t()
            // No signal reaches it (ThreadSignals.swift says why).
            let status = ThreadSignals.startingThread { pthread_create(&thread, nil, { context in
                let box = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
                box.body()
                return nil
            }, context) }
            if status != 0 {
                Unmanaged<ThreadBody>.fromOpaque(context).release()
                throw Errno(rawValue: status)
            }
            let joined = pthread_join(thread, nil)
            // Failing to join would let the closure outlive its captures.
            precondition(joined == 0, "pthread_join: \(Errno(rawValue: joined))")
        }
    }
}
