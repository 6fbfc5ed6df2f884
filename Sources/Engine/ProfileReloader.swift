internal import Rules
internal import Synchronization
internal import Sys

/// SIGHUP's reload, read on a worker thread. Reading a profile compiles its
/// patterns, and an ad-blocking list of tens of thousands of lines takes a
/// good part of a second: on the loop's thread every flow would wait that
/// long. The worker reads and checks the file, then wakes the loop through
/// an eventfd, and the loop applies the result between events. A SIGHUP that
/// comes while a read is under way asks for one more read after it, so the
/// file as it is after the last signal is the one applied.
final class ProfileReloader {
    enum Outcome: Sendable {
        case loaded(Profile)
        /// The errors, printed as `sluice check` prints them.
        case failed(String)
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
    /// A SIGHUP came while a read was under way.
    private var readAgain = false

    init(path: String) throws(Errno) {
        self.path = path
        shared = Shared(wake: try EventFD())
    }

    /// What the loop watches: readable once a read has finished.
    var descriptor: Int32 { shared.wake.descriptor.rawValue }

    /// Starts a read, or notes that another is due after the one under way.
    /// Nil when the read started; the outcome at once when no thread could
    /// be started (the file is then read here, on the loop's thread).
    func start() -> Outcome? {
        if worker != nil {
            readAgain = true
            return nil
        }
        let shared = self.shared, path = self.path
        do {
            worker = try WorkerThread {
                // The loop comes first: the read takes what CPU it leaves.
                WorkerThread.lowerCurrentPriority()
                let outcome = Self.read(path)
                shared.outcome.withLock { $0 = outcome }
                _ = try? shared.wake.signal()
            }
            return nil
        } catch {
            return Self.read(path)
        }
    }

    /// After the eventfd fired: hands the finished read's outcome to `apply`
    /// (its thread joined), then starts the read a later SIGHUP asked for.
    func deliver(_ apply: (Outcome) -> Void) {
        _ = try? shared.wake.drain()
        guard let outcome = shared.outcome.withLock({ value -> Outcome? in
            defer { value = nil }
            return value
        }) else { return }
        worker = nil
        apply(outcome)
        if readAgain {
            readAgain = false
            if let outcome = start() { apply(outcome) }
        }
    }

    private static func read(_ path: String) -> Outcome {
        do { return .loaded(try ProfileLoader.loadForRun(path)) } catch { return .failed(error.description) }
    }
}
