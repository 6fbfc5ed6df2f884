internal import HTTP
internal import Rules
internal import Sys

/// What a loop that the control API can drive offers it: the tunnel's
/// (`sluice exec`, `sluice run`) and the proxy server's (`sluice proxy`).
protocol ControlledLoop: AnyObject {
    /// The open flows (or connections), by id.
    func controlFlows() -> [ControlFlow]
    /// Closes one by its id: its app or client sees a reset.
    func closeFlow(id: UInt64) -> Bool
    /// The loop's counters, what is open, the profile and its [Statistics] books, as one JSON object.
    func writeControlStatistics(into json: inout JSONWriter)
    /// Decides the routes of new flows: its groups are what `GET /groups` and `PUT /groups/NAME` see.
    var director: FlowDirector { get }
    /// A reloaded profile takes over; open flows keep their routes.
    func apply(_ profile: Profile?, log: (String) -> Void)
    /// The last finished requests and connections.
    var recentRequests: RecentRequests { get }
}

/// A running loop as the control API sees it, and the reloads of its
/// profile (SIGHUP's and `POST /reload`'s, which share one `ProfileReloader`).
/// A small adapter rather than a conformance of the loop itself, because a
/// reload needs the profile's path and reader, which the loop does not
/// keep. Everything here runs on the loop's thread (ControlServer.serve is
/// called from it).
final class LoopControl<Loop: ControlledLoop>: ControlTarget {
    let loop: Loop
    /// Reads the profile given with --profile; nil runs on the built-in default.
    let reloader: ProfileReloader?
    /// Lines for the session's log (a reload's warnings), taken after each `serve`.
    var pendingLog: [String] = []
    /// Who asked for each read under way or due ("SIGHUP", "control"), for the log.
    var askedBy: [Int: [String]] = [:]

    init(_ loop: Loop, reloader: ProfileReloader?) {
        self.loop = loop
        self.reloader = reloader
    }

    func log(_ line: String) { pendingLog.append(line) }

    func takeLog() -> [String] {
        defer { pendingLog.removeAll() }
        return pendingLog
    }

    func flows() -> [ControlFlow] {
        loop.controlFlows()
    }

    func close(id: UInt64) -> Bool {
        loop.closeFlow(id: id)
    }

    func writeStatistics(into json: inout JSONWriter) {
        loop.writeControlStatistics(into: &json)
    }

    func groups() -> [ControlGroup] {
        loop.director.controlGroups()
    }

    func recentRequests(after: UInt64?, limit: Int) -> RecentRequests.Page {
        loop.recentRequests.page(after: after, limit: limit)
    }

    func select(group: String, member: String) -> Result<String, ControlFailure> {
        loop.director.select(group: group, member: member)
    }

    func reload() -> ControlReload {
        guard reloader != nil else {
            return .finished(.failure(ControlFailure(kind: .conflict, message: "running on the built-in default profile (no --profile): nothing to reload")))
        }
        return startReload(askedBy: "control")
    }

    /// SIGHUP: the same read as `POST /reload`, with nobody waiting for an answer.
    func reloadOnSignal() {
        guard reloader != nil else {
            log("sluice: SIGHUP: running on the built-in default profile; nothing to reload")
            return
        }
        _ = startReload(askedBy: "SIGHUP")
    }

    func startReload(askedBy asker: String) -> ControlReload {
        guard let reloader else { preconditionFailure("startReload without a profile") }
        switch reloader.start() {
        case let .reading(generation):
            if askedBy[generation]?.contains(asker) != true { askedBy[generation, default: []].append(asker) }
            return .reading(generation: generation)
        case let .finished(outcome, generation):
            askedBy[generation, default: []].append(asker)
            return .finished(apply(outcome, generation: generation))
        }
    }

    /// Read number `generation` is done: a good profile replaces the
    /// loop's (open flows keep their routes), one with errors changes
    /// nothing. Returns the answer for the clients that waited for it.
    func apply(_ outcome: ProfileReloader.Outcome, generation: Int) -> Result<String, ControlFailure> {
        let path = reloader?.path ?? "the profile"
        let asker = (askedBy.removeValue(forKey: generation) ?? ["reload"]).joined(separator: ", ")
        switch outcome {
        case let .loaded(profile):
            loop.apply(profile, log: { self.log($0) })
            let message = "reloaded \(path) (\(profile.rules.count + 1) rules); open flows keep their routes"
            log("sluice: \(asker): " + message)
            return .success(message)
        case let .failed(errors):
            log(errors)
            let message = "\(path) has errors; still using the previous profile"
            log("sluice: \(asker): " + message)
            return .failure(ControlFailure(kind: .invalid, message: message, errors: errors.split(separator: "\n").map(String.init)))
        }
    }
}
