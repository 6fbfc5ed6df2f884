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

    /// Whether a recorder made for `profile` would choose flows as this one does;
    /// the choice is made when the recorder opens, so a reload cannot change it.
    func captureSelectionWarning(for profile: Profile) -> String? {
        guard let recorder = io.recorder, recorder.selectsFlows != profile.selectsCapturedFlows else { return nil }
        return recorder.selectsFlows
            ? "sluice: the reloaded profile has no capture rule, but the capture keeps choosing flows by rule until Sluice restarts; flows decided now are left out"
            : "sluice: the reloaded profile has capture rules, but the capture keeps every flow until Sluice restarts"
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
