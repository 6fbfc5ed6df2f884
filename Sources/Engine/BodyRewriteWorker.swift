internal import HTTP
internal import Synchronization
internal import Sys

/// [Body Rewrite] of large bodies, on a thread of its own: a regex pair over
/// a 4 MiB body takes about 150 ms, and on the loop's thread every other
/// flow would wait that long. The loop hands over a held body
/// (`HeldBody.runsOffTheLoop`), goes on with other flows, and is woken
/// through an eventfd when the outcome is ready; the flow whose message it
/// is waits meanwhile (`OutgoingBytes.openHole`). Jobs start in the order
/// given, on up to `maximumThreads` threads (a second starts when a job
/// finds none idle), so one flow's large body does not hold another's:
/// outcomes come back in the order they finish.
final class BodyRewriteWorker {
    typealias Outcome = Result<[UInt8]?, ContentDecoding.Failure>

    struct Finished: Sendable {
        let id: UInt64
        let outcome: Outcome
    }

    /// Two: these machines have two cores, and the loop and the apps want one.
    static let maximumThreads = 2

    /// What the loop and the worker share.
    private final class Shared: Sendable {
        /// The loop's: readable when outcomes wait.
        let finishedWake: EventFD
        /// The worker's: readable when jobs wait, or it should stop.
        let jobsWake: EventFD
        let jobs = Mutex<(waiting: [(id: UInt64, work: @Sendable () -> Outcome)], idle: Int, stopping: Bool)>(([], 0, false))
        let finished = Mutex<[Finished]>([])

        init(finishedWake: consuming EventFD, jobsWake: consuming EventFD) {
            self.finishedWake = finishedWake
            self.jobsWake = jobsWake
        }
    }

    private let shared: Shared
    /// A running thread (joined when dropped); a class, since a thread cannot be copied into an array.
    private final class Running {
        let thread: WorkerThread
        init(_ thread: consuming WorkerThread) { self.thread = thread }
    }

    private var workers: [Running] = []
    private var nextID: UInt64 = 1

    init() throws(Errno) {
        shared = Shared(finishedWake: try EventFD(), jobsWake: try EventFD())
    }

    deinit {
        shared.jobs.withLock { $0.stopping = true }
        _ = try? shared.jobsWake.signal()
        // Dropping the threads joins them: at most the jobs under way are waited for.
        workers.removeAll()
    }

    /// What the loop watches.
    var descriptor: Int32 { shared.finishedWake.descriptor.rawValue }

    /// `body` queued on `worker`, which is made (and its descriptor handed
    /// to `watch`, which says whether the loop took it) with the first one;
    /// nil when it cannot be (the caller rewrites on the loop).
    static func submit(_ body: HeldBody, to worker: inout BodyRewriteWorker?, watch: (Int32) -> Bool) -> UInt64? {
        if worker == nil {
            guard let made = try? BodyRewriteWorker(), watch(made.descriptor) else { return nil }
            worker = made
        }
        return worker?.submit(body)
    }

    /// Queues `body`; its outcome comes back under the returned id. Nil when
    /// no thread could be started (the caller rewrites on the loop).
    func submit(_ body: HeldBody) -> UInt64? {
        submit { body.rewrite() }
    }

    /// Queues `work` (a rewrite; tests give others), as `submit(_:)` does.
    func submit(_ work: @escaping @Sendable () -> Outcome) -> UInt64? {
        let shared = self.shared
        let noneIdle = shared.jobs.withLock { $0.waiting.count >= $0.idle }
        if workers.isEmpty || (noneIdle && workers.count < Self.maximumThreads) {
            do {
                workers.append(Running(try WorkerThread {
                    // The loop comes first; this work is one flow's.
                    WorkerThread.lowerCurrentPriority(nice: 5)
                    Self.serve(shared)
                }))
            } catch {
                // With a thread already, the job waits for it.
                if workers.isEmpty { return nil }
            }
        }
        let id = nextID
        nextID += 1
        shared.jobs.withLock { $0.waiting.append((id, work)) }
        _ = try? shared.jobsWake.signal()
        return id
    }

    /// How many threads run (for tests).
    var threadCount: Int { workers.count }

    /// The outcomes that are ready, in the order they finished.
    func takeFinished() -> [Finished] {
        _ = try? shared.finishedWake.drain()
        return shared.finished.withLock { finished in
            defer { finished = [] }
            return finished
        }
    }

    /// A thread's loop: a job at a time, until told to stop. The threads
    /// share one eventfd: whoever takes a job and leaves others waiting
    /// signals it again, so an idle thread wakes for them.
    private static func serve(_ shared: Shared) {
        while true {
            let next = shared.jobs.withLock { jobs -> (job: (id: UInt64, work: @Sendable () -> Outcome)?, stop: Bool, more: Bool) in
                if jobs.stopping { return (nil, true, false) }
                guard !jobs.waiting.isEmpty else {
                    jobs.idle += 1
                    return (nil, false, false)
                }
                let job = jobs.waiting.removeFirst()
                return (job, false, !jobs.waiting.isEmpty)
            }
            if next.stop {
                // The others stop too.
                _ = try? shared.jobsWake.signal()
                return
            }
            guard let job = next.job else {
                // Nothing to do: sleep until a job or the stop (the timeout only bounds a missed wake-up).
                _ = try? shared.jobsWake.wait(timeoutMilliseconds: 1000)
                _ = try? shared.jobsWake.drain()
                shared.jobs.withLock { $0.idle -= 1 }
                continue
            }
            if next.more { _ = try? shared.jobsWake.signal() }
            let outcome = job.work()
            shared.finished.withLock { $0.append(Finished(id: job.id, outcome: outcome)) }
            _ = try? shared.finishedWake.signal()
        }
    }
}
