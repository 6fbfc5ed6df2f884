internal import Sys
internal import Stack

extension Tunnel {
    /// A socket for a new flow could not be made. Out of descriptors (EMFILE,
    /// ENFILE) the flow fails like any upstream failure, and the user hears
    /// why: once per ten seconds, not once per flow, since a shortage refuses
    /// every new flow until some close.
    func socketFailed(_ error: Errno) {
        io.statistics.upstreamErrors += 1
        guard error.isDescriptorShortage else { return }
        if let last = lastDescriptorWarning, now < last + .seconds(10) { return }
        lastDescriptorWarning = now
        EngineLog.warning("\(OpenFilesLimit.shortage(error)): new flows are refused until some close; raise the hard limit (ulimit -Hn, or LimitNOFILE= for a service)")
    }
}
