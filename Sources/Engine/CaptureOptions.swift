internal import Capture
internal import Rules

/// `--pcap FILE` and its companions; the profile's [Capture] section fills
/// what the command line leaves out.
public struct CaptureOptions: Sendable {
    public var pcap: String?
    public var filter: String?
    public var snaplen: Int?
    public var rotateSize: Int?
    public var rotateCount: Int?
    /// `--flow-log FILE`: one JSON line per connection and per HTTP request.
    public var flowLog: String?
    public init() {}

    func flowLogWriter() throws(EngineError) -> FlowLogWriter? {
        guard let flowLog else { return nil }
        do { return try FlowLogWriter(path: flowLog) } catch {
            throw EngineError.report("sluice: flow log: \(error)")
        }
    }

    /// The recorder these options (and the profile's [Capture]) ask for, or nil.
    func recorder(profile: Profile?) throws(EngineError) -> PacketRecorder? {
        let section = profile?.capture
        guard let path = pcap ?? section?.pcapPath else { return nil }
        let filter = self.filter ?? section?.filter
        let snaplen = self.snaplen ?? section?.snapLength ?? 262_144
        let rotateSize = self.rotateSize ?? section?.rotateSize
        let rotateCount = self.rotateCount ?? (section?.pcapPath != nil && rotateSize != nil ? section?.rotateCount : nil)
        do {
            return try PacketRecorder(path: path, snaplen: snaplen, filter: filter, rotateSize: rotateSize, rotateCount: rotateCount)
        } catch {
            throw EngineError.report("sluice: capture: \(error)")
        }
    }
}
