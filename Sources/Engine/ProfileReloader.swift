internal import Rules
internal import Synchronization
internal import Sys

/// A reload (SIGHUP, or `POST /reload` on the control socket), read on a
/// worker thread. Reading a profile compiles its patterns, and an
/// ad-blocking list of tens of thousands of lines takes a good part of a
/// second: on the loop's thread every flow would wait that long. The worker
/// reads and checks the file, then wakes the loop through an eventfd, and
/// the loop applies the result between events. A reload asked for while a
/// read is under way gets one more read after it, so the file as it is after
/// the last request is the one applied.
///
/// Reads are numbered (`Start.reading(generation:)`): whoever waits for an
/// answer (a control client) waits for the read of that number, the first
/// to begin after it asked.
final class ProfileReloader {
    enum Outcome: Sendable {
        case loaded(Profile)
        /// The errors, printed as `sluice check` prints them.
        case failed(String)
    }

    enum Start {
        /// Read number `generation` will see the file as it is now; `deliver` hands it over.
        case reading(generation: Int)
        /// No thread could be started: the file was read here, on the loop's thread.
        case finished(Outcome, generation: Int)
    }

    /// What the worker and the loop share.
    private final class Shared: Sendable {
        let wake: EventFD
        let outcome = Mutex<Outcome?>(nil)
        init(wake: consuming EventFD) { self.wake = wake }
    }

    let path: String
    private let shared: Shared
    private var worker: WorkerThread?
    /// A reload was asked for while a read was under way.
    private var readAgain = false
    /// Reads begun so far; the one under way, if any, is the last.
    private(set) var generation = 0

    init(path: String) throws(Errno) {
        self.path = path
        shared = Shared(wake: try EventFD())
    }

    /// What the loop watches: readable once a read has finished.
    var descriptor: Int32 { shared.wake.descriptor.rawValue }

    /// Starts a read, or notes that another is due after the one under way.
    func start() -> Start {
        if worker != nil {
            readAgain = true
            return .reading(generation: generation + 1)
        }
        generation += 1
        let shared = self.shared, path = self.path
        do {
            worker = try WorkerThread {
                // The loop comes first: the read takes what CPU it leaves.
                WorkerThread.lowerCurrentPriority()
                let outcome = Self.read(path)
                shared.outcome.withLock { $0 = outcome }
                _ = try? shared.wake.signal()
            }
            return .reading(generation: generation)
        } catch {
            return .finished(Self.read(path), generation: generation)
        }
    }

    /// After the eventfd fired: hands the finished read's outcome and number
    /// to `apply` (its thread joined), then starts the read a later request
    /// asked for.
    func deliver(_ apply: (Outcome, Int) -> Void) {
        _ = try? shared.wake.drain()
        guard let outcome = shared.outcome.withLock({ value -> Outcome? in
            defer { value = nil }
            return value
        }) else { return }
        worker = nil
        apply(outcome, generation)
        // A read that `apply` started (a pipelined reload) began after every
        // request that asked for another: it answers them too.
        if readAgain {
            readAgain = false
            if worker == nil, case let .finished(outcome, number) = start() { apply(outcome, number) }
        }
    }

    private static func read(_ path: String) -> Outcome {
        do { return .loaded(try ProfileLoader.loadForRun(path)) } catch { return .failed(error.description) }
    }
}
