internal import Capture
internal import Rules
internal import Stack
internal import Wire

/// The profile's `capture` rules: when any rule has the option, the capture
/// keeps only the flows such rules decide. The loop says so once per flow,
/// when the flow is decided; the capture writer holds the flow's packets
/// until then (docs/capture.md, "Capturing chosen flows").
extension Tunnel {
    func selectForCapture(_ key: FlowKey, facts: FlowFacts?) {
        guard let recorder = io.recorder, recorder.selectsFlows else { return }
        recorder.select(key.captureFlow, keep: director.capturesFlow(facts ?? self.facts(for: key)))
    }

    /// A reload: the capture follows the new profile's `capture` rules. With
    /// none, it keeps every flow again; with some, every open flow is decided
    /// again by what the tunnel knows of it now (its name, address, port and
    /// transport; not a request already gone by), so the capture holds from
    /// now on what it would hold had the tunnel started with this profile.
    func applyCaptureRules(_ profile: Profile, log: (String) -> Void) {
        guard let recorder = io.recorder else { return }
        let selects = profile.selectsCapturedFlows
        guard recorder.setSelectsFlows(selects) else {
            log("sluice: the capture's writer is behind: it goes on \(recorder.selectsFlows ? "keeping only the flows capture rules chose" : "keeping every flow") until the next reload")
            return
        }
        guard selects else { return }
        for (key, entry) in flowRecords {
            var known = facts(for: key)
            if let domain = entry.record.domain { known.domain = domain }
            recorder.select(key.captureFlow, keep: director.capturesFlow(known))
        }
    }
}

extension FlowKey {
    /// The same flow as the capture writer names it from packet headers.
    var captureFlow: CaptureFlow {
        let transport = self.transport.rawValue
        // ICMP echo: the identifier stands for both ports (FlowPcapFiles.key).
        let remotePort = transport == 1 || transport == 58 ? appPort : destinationPort
        return CaptureFlow(transport: transport, app: appAddress, appPort: appPort,
                           remote: destinationAddress, remotePort: remotePort)
    }
}
