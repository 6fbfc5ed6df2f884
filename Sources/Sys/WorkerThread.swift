// WorkerThread exists for work that must not run on the event loop's thread
// and lives as long as the object that starts it (the capture writer, which
// does disk I/O): a plain pthread, started once and joined once. Unlike
// DedicatedThread, the caller does not wait for it.
import Glibc
import CShim

private final class WorkerBody {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

public struct WorkerThread: ~Copyable, Sendable {
    private let thread: pthread_t

    /// Starts `body` on a new pthread. Dropping the WorkerThread joins it, so
    /// a body never outlives its owner.
    public init(_ body: @escaping @Sendable () -> Void) throws(Errno) {
        let context = Unmanaged.passRetained(WorkerBody(body)).toOpaque()
        var thread = pthread_t()
        // No signal reaches it (ThreadSignals.swift says why).
        let status = ThreadSignals.startingThread { pthread_create(&thread, nil, { context in
            let box = Unmanaged<WorkerBody>.fromOpaque(context!).takeRetainedValue()
            box.body()
            return nil
        }, context) }
        if status != 0 {
            Unmanaged<WorkerBody>.fromOpaque(context).release()
            throw Errno(rawValue: status)
        }
        self.thread = thread
    }

    /// Lowers the calling thread's scheduling priority to `nice` (Linux
    /// keeps a nice value per thread): work that must yield to the event
    /// loop under load, such as the capture writer, which then falls behind
    /// and drops from the capture rather than slowing the traffic.
    /// Puts the calling thread in SCHED_IDLE: it runs only on a core nothing
    /// else wants. Falls back to `lowerCurrentPriority` where that is refused.
    public static func idleCurrentThread() {
        if cshim_sched_idle_current_thread() != 0 { lowerCurrentPriority(nice: 19) }
    }

    public static func lowerCurrentPriority(nice: Int32 = 10) {
        // who = 0 is the calling thread on Linux (nice is per thread there).
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
    }

    /// Waits for the body to return.
    public consuming func join() {
        // deinit does the joining; consuming self ends it here.
    }

    deinit {
        let joined = pthread_join(thread, nil)
        // Only EDEADLK (joining oneself) or a bad handle can fail here: both are bugs.
        precondition(joined == 0, "pthread_join: \(Errno(rawValue: joined))")
    }
}
