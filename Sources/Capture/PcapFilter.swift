// PcapFilter exists so `--pcap-filter` means exactly what it means to tcpdump:
// the expression goes through libpcap's compiler for the capture's link type,
// and packets are tested with libpcap's BPF interpreter (pcap_offline_filter),
// off the packet path, on the capture writer's thread.
internal import CShim

public final class PcapFilter {
    public let expression: String
    private let program: UnsafeMutablePointer<bpf_program>

    /// Compiles `expression` for packets of `linkType` cut to `snaplen`. A bad
    /// expression throws libpcap's own message (`syntax error`, `unknown host`...).
    public init(_ expression: String, linkType: PcapLinkType = .raw, snaplen: Int = 65535) throws(CaptureError) {
        guard let handle = pcap_open_dead(linkType.dlt, Int32(clamping: snaplen)) else {
            throw .badFilter(expression: expression, reason: "pcap_open_dead failed")
        }
        defer { pcap_close(handle) }
        let program = UnsafeMutablePointer<bpf_program>.allocate(capacity: 1)
        program.initialize(to: bpf_program())
        if pcap_compile(handle, program, expression, 1, PCAP_NETMASK_UNKNOWN) != 0 {
            let reason = String(cString: pcap_geterr(handle))
            program.deallocate()
            throw .badFilter(expression: expression, reason: reason)
        }
        self.expression = expression
        self.program = program
    }

    deinit {
        pcap_freecode(program)
        program.deallocate()
    }

    /// Whether the filter keeps this packet. `bytes` is what was captured (cut to
    /// snaplen), `originalLength` its length on the wire.
    public func matches(_ bytes: UnsafeRawBufferPointer, originalLength: Int? = nil) -> Bool {
        var header = pcap_pkthdr()
        header.caplen = UInt32(truncatingIfNeeded: bytes.count)
        header.len = UInt32(truncatingIfNeeded: max(originalLength ?? bytes.count, bytes.count))
        guard let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            var empty: UInt8 = 0
            return pcap_offline_filter(program, &header, &empty) != 0
        }
        return pcap_offline_filter(program, &header, data) != 0
    }
}

extension PcapFilter: CustomStringConvertible {
    public var description: String { "filter '\(expression)'" }
}
