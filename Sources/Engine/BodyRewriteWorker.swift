internal import HTTP
internal import Synchronization
internal import Sys

/// [Body Rewrite] of large bodies, on a thread of its own: a regex pair over
/// a 4 MiB body takes about 150 ms, and on the loop's thread every other
/// flow would wait that long. The loop hands over a held body
/// (`HeldBody.runsOffTheLoop`), goes on with other flows, and is woken
/// through an eventfd when the outcome is ready; the flow whose message it
/// is waits meanwhile (`OutgoingBytes.openHole`). Jobs run one at a time, in
/// the order given.
final class BodyRewriteWorker {
    struct Finished: Sendable {
        let id: UInt64
        let outcome: Result<[UInt8]?, ContentDecoding.Failure>
    }

    /// What the loop and the worker share.
    private final class Shared: Sendable {
        /// The loop's: readable when outcomes wait.
        let finishedWake: EventFD
        /// The worker's: readable when jobs wait, or it should stop.
        let jobsWake: EventFD
        let jobs = Mutex<(waiting: [(id: UInt64, body: HeldBody)], stopping: Bool)>(([], false))
        let finished = Mutex<[Finished]>([])

        init(finishedWake: consuming EventFD, jobsWake: consuming EventFD) {
            self.finishedWake = finishedWake
            self.jobsWake = jobsWake
        }
    }

    private let shared: Shared
    private var worker: WorkerThread?
    private var nextID: UInt64 = 1

    init() throws(Errno) {
        shared = Shared(finishedWake: try EventFD(), jobsWake: try EventFD())
    }

    deinit {
        shared.jobs.withLock { $0.stopping = true }
        _ = try? shared.jobsWake.signal()
        // Dropping the thread joins it: at most the job under way is waited for.
        _ = worker.take()
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
        if worker == nil {
            let shared = self.shared
            do {
                worker = try WorkerThread {
                    // The loop comes first; this work is one flow's.
                    WorkerThread.lowerCurrentPriority(nice: 5)
                    Self.serve(shared)
                }
            } catch {
                return nil
            }
        }
        let id = nextID
        nextID += 1
        shared.jobs.withLock { $0.waiting.append((id, body)) }
        _ = try? shared.jobsWake.signal()
        return id
    }

    /// The outcomes that are ready, in the order they finished.
    func takeFinished() -> [Finished] {
        _ = try? shared.finishedWake.drain()
        return shared.finished.withLock { finished in
            defer { finished = [] }
            return finished
        }
    }

    /// The worker's loop: a job at a time, until told to stop.
    private static func serve(_ shared: Shared) {
        while true {
            let next = shared.jobs.withLock { jobs -> (job: (id: UInt64, body: HeldBody)?, stop: Bool) in
                if jobs.stopping { return (nil, true) }
                return jobs.waiting.isEmpty ? (nil, false) : (jobs.waiting.removeFirst(), false)
            }
            if next.stop { return }
            guard let job = next.job else {
                // Nothing to do: sleep until a job or the stop (the timeout only bounds a missed wake-up).
                _ = try? shared.jobsWake.wait(timeoutMilliseconds: 1000)
                _ = try? shared.jobsWake.drain()
                continue
            }
            let outcome = job.body.rewrite()
            shared.finished.withLock { $0.append(Finished(id: job.id, outcome: outcome)) }
            _ = try? shared.finishedWake.signal()
        }
    }
}
