internal import Capture
internal import Rules

/// `--pcap FILE` and its companions; the profile's [Capture] section fills
/// what the command line leaves out.
public struct CaptureOptions: Sendable {
    public var pcap: String?
    /// `--pcap-per-flow DIR`: one pcap file per flow in DIR.
    public var pcapPerFlow: String?
    public var filter: String?
    public var snaplen: Int?
    public var rotateSize: Int?
    public var rotateCount: Int?
    /// `--flow-log FILE`: one JSON line per connection and per HTTP request.
    public var flowLog: String?
    /// `--har FILE` and `--har-body-limit N`.
    public var har: String?
    public var harBodyLimit: Int?
    public init() {}

    func harRecorder(profile: Profile?) throws(EngineError) -> HARRecorder? {
        guard let path = har ?? profile?.capture.harPath else {
            // An option that would do nothing is a mistake to say, not to ignore.
            if harBodyLimit != nil {
                throw EngineError.usage("sluice: --har-body-limit has no HAR to apply to: add --har FILE (or har = FILE in the profile's [Capture])")
            }
            return nil
        }
        do { return try HARRecorder(path: path, bodyLimit: harBodyLimit ?? profile?.capture.harBodyLimit ?? 1 << 20) } catch {
            throw EngineError.report("sluice: HAR: \(error)")
        }
    }

    func flowLogWriter() throws(EngineError) -> FlowLogWriter? {
        guard let flowLog else { return nil }
        do { return try FlowLogWriter(path: flowLog) } catch {
            throw EngineError.report("sluice: flow log: \(error)")
        }
    }

    /// The recorder these options (and the profile's [Capture]) ask for, or nil.
    func recorder(profile: Profile?) throws(EngineError) -> PacketRecorder? {
        let section = profile?.capture
        let path = pcap ?? section?.pcapPath
        let perFlow = pcapPerFlow ?? section?.perFlowDirectory
        guard path != nil || perFlow != nil else {
            // An option that would do nothing is a mistake to say, not to ignore.
            let unused = [("--pcap-filter", filter != nil), ("--snaplen", snaplen != nil), ("--pcap-rotate-size", rotateSize != nil),
                          ("--pcap-rotate-count", rotateCount != nil)].first { $0.1 }
            if let (option, _) = unused {
                throw EngineError.usage("sluice: \(option) has no capture to apply to: add --pcap FILE or --pcap-per-flow DIR "
                                        + "(or pcap = FILE in the profile's [Capture])")
            }
            return nil
        }
        let filter = self.filter ?? section?.filter
        let snaplen = self.snaplen ?? section?.snapLength ?? 262_144
        let rotateSize = self.rotateSize ?? section?.rotateSize
        let rotateCount = self.rotateCount ?? (section?.pcapPath != nil && rotateSize != nil ? section?.rotateCount : nil)
        do {
            return try PacketRecorder(path: path, perFlowDirectory: perFlow, snaplen: snaplen, filter: filter, rotateSize: rotateSize,
                                      rotateCount: rotateCount, selectsFlows: profile?.selectsCapturedFlows ?? false)
        } catch {
            throw EngineError.report("sluice: capture: \(error)")
        }
    }
}
