/// [Capture] (ext): what Sluice records. Paths are absolute once loaded.
public struct CaptureSettings: Equatable, Sendable {
    /// Where the TUN's packets go, as pcap; nil: no packet capture.
    public var pcapPath: String?
    /// A folder for one pcap file per flow (`per-flow`); nil: none.
    public var perFlowDirectory: String?
    /// A pcap-filter(7) expression; nil: every packet.
    public var filter: String?
    public var snapLength: Int
    /// Bytes after which the pcap file rotates; nil: never.
    public var rotateSize: Int?
    /// How many rotated files are kept.
    public var rotateCount: Int
    /// Where HTTP exchanges go, as HAR 1.2; nil: no HAR.
    public var harPath: String?
    /// Bodies larger than this are cut in the HAR (the flow itself is not).
    public var harBodyLimit: Int

    public static let defaultSnapLength = 262_144
    public static let defaultRotateCount = 10
    public static let defaultHARBodyLimit = 1 << 20

    public init(pcapPath: String? = nil, filter: String? = nil, snapLength: Int = defaultSnapLength,
                rotateSize: Int? = nil, rotateCount: Int = defaultRotateCount, harPath: String? = nil,
                harBodyLimit: Int = defaultHARBodyLimit) {
        self.pcapPath = pcapPath; self.filter = filter; self.snapLength = snapLength; self.rotateSize = rotateSize
        self.rotateCount = rotateCount; self.harPath = harPath; self.harBodyLimit = harBodyLimit
    }
}
