internal import CShim
internal import Glibc

extension Socket {
    /// Drops, in the kernel, every packet that reaches this socket through
    /// the interface `index` of the socket's namespace. Whole-host mode's raw
    /// ICMP sockets need it: they see every ICMP packet the namespace
    /// receives, the echo replies Sluice itself writes into its TUN (for the
    /// host's own address) among them, and taking those for replies from the
    /// network wrote them back into the TUN without end.
    public func ignoreArrivals(onInterface index: UInt32) throws(Errno) {
        // Classic BPF (socket(7), SO_ATTACH_FILTER): load the ancillary word
        // that holds the arriving interface's index, keep nothing (return 0
        // bytes) when it is `index`, keep the whole packet otherwise.
        let interfaceWord = UInt32(bitPattern: Int32(SKF_AD_OFF) + Int32(SKF_AD_IFINDEX))
        var program = [
            sock_filter(code: UInt16(BPF_LD | BPF_W | BPF_ABS), jt: 0, jf: 0, k: interfaceWord),
            sock_filter(code: UInt16(BPF_JMP | BPF_JEQ | BPF_K), jt: 0, jf: 1, k: index),
            sock_filter(code: UInt16(BPF_RET | BPF_K), jt: 0, jf: 0, k: 0),
            sock_filter(code: UInt16(BPF_RET | BPF_K), jt: 0, jf: 0, k: UInt32.max),
        ]
        let raw = descriptor.rawValue
        try program.withUnsafeMutableBufferPointer { (instructions) throws(Errno) in
            var fprog = sock_fprog(len: UInt16(instructions.count), filter: instructions.baseAddress)
            _ = try valueOrErrno { setsockopt(raw, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, socklen_t(MemoryLayout<sock_fprog>.size)) }.get()
        }
    }
}
