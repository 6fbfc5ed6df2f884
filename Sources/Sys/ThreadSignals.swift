// A thread Sluice starts must never take a signal: the event loop reads
// SIGINT, SIGTERM and SIGHUP from a signalfd, which only works while every
// thread blocks them. A thread that did not would receive one the default
// way (the kernel picks any thread that does not block it), and the
// default for all three ends the whole process: `exec --pcap` died on the
// SIGHUP that should have reloaded its profile. Blocking every signal in
// the creating thread around pthread_create gives the new thread that
// mask from its first instruction (it inherits it), with no window.
import Glibc

enum ThreadSignals {
    /// Runs `create` (a pthread_create) with every signal blocked, then
    /// puts the caller's mask back.
    static func startingThread<T>(_ create: () -> T) -> T {
        var all = sigset_t(), previous = sigset_t()
        sigfillset(&all)
        _ = pthread_sigmask(SIG_BLOCK, &all, &previous)
        defer { _ = pthread_sigmask(SIG_SETMASK, &previous, nil) }
        return create()
    }
}
