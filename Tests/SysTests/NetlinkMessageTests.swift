import CShim
import Glibc
@testable import Sys
import Testing

/// Byte-level checks of request layout and reply parsing, no kernel needed.
@Suite struct NetlinkMessageTests {
    private func withPoisonedBuffer<R>(_ count: Int = 256, _ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 8)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0xAA)
        return try body(buffer)
    }

    private func u16(_ bytes: [UInt8], _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    private func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }

    @Test func headersAndAttributesAreAlignedAndPaddedWithZeros() throws {
        let bytes: [UInt8] = try withPoisonedBuffer { buffer in
            var message = try NetlinkMessage(in: buffer, type: Int(RTM_NEWLINK), flags: NLM_F_REQUEST | NLM_F_ACK, sequence: 0x0102_0304)
            var header = ifinfomsg()
            header.ifi_index = 7
            try message.appendHeader(header)
            // A 5-byte payload ("tun0\0") must be padded to 8 bytes after its 4-byte rtattr.
            try [UInt8]([0x74, 0x75, 0x6E, 0x30, 0]).withUnsafeBytes { try message.appendAttribute(type: Int(IFLA_IFNAME), payload: $0) }
            try message.appendAttribute(type: Int(IFLA_MTU), u32: 1500)
            return Array(message.finish())
        }
        #expect(bytes.count == 16 + 16 + 12 + 8)
        #expect(u32(bytes, 0) == UInt32(bytes.count))        // nlmsg_len
        #expect(u16(bytes, 4) == UInt16(RTM_NEWLINK))          // nlmsg_type
        #expect(u16(bytes, 6) == UInt16(NLM_F_REQUEST | NLM_F_ACK))
        #expect(u32(bytes, 8) == 0x0102_0304)                  // nlmsg_seq
        #expect(u32(bytes, 12) == 0)                           // nlmsg_pid
        #expect(u32(bytes, 16 + 4) == 7)                       // ifi_index
        #expect(u16(bytes, 32) == 9)                           // rta_len: 4 + 5, unpadded
        #expect(u16(bytes, 34) == UInt16(IFLA_IFNAME))
        #expect(Array(bytes[36..<41]) == [0x74, 0x75, 0x6E, 0x30, 0])
        #expect(Array(bytes[41..<44]) == [0, 0, 0])            // RTA_ALIGN padding, not 0xAA
        #expect(u16(bytes, 44) == 8)
        #expect(u16(bytes, 46) == UInt16(IFLA_MTU))
        #expect(u32(bytes, 48) == 1500)
        #expect(!bytes.contains(0xAA))
    }

    @Test func addressesGoInNetworkOrder() throws {
        let bytes: [UInt8] = try withPoisonedBuffer { buffer in
            var message = try NetlinkMessage(in: buffer, type: Int(RTM_NEWADDR), flags: 0, sequence: 1)
            try message.appendAttribute(type: Int(IFA_LOCAL), address: .v4(0x0A4D_0001))
            try message.appendAttribute(type: Int(IFA_ADDRESS), address: try #require(SysIPAddress("fd00:77::1")))
            return Array(message.finish())
        }
        #expect(Array(bytes[20..<24]) == [10, 77, 0, 1])
        #expect(u16(bytes, 24) == 20)
        #expect(Array(bytes[28..<44]) == [0xFD, 0, 0, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
    }

    @Test func overflowingTheBufferThrowsInsteadOfWritingPast() throws {
        try withPoisonedBuffer(64) { buffer in
            let small = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<24])
            var message = try NetlinkMessage(in: small, type: Int(RTM_NEWLINK), flags: 0, sequence: 1)
            try message.appendAttribute(type: Int(IFLA_MTU), u32: 1)
            #expect(throws: Errno.noBufferSpace) { try message.appendAttribute(type: Int(IFLA_MTU), u32: 2) }
            #expect(Array(buffer[24..<64]).allSatisfy { $0 == 0xAA })
        }
    }

    /// nlmsghdr(len, type=NLMSG_ERROR, flags, seq, pid) + nlmsgerr.error, little-endian like the kernel on x86.
    private func errorMessage(sequence: UInt32, error: Int32, type: UInt16 = UInt16(NLMSG_ERROR)) -> [UInt8] {
        var bytes: [UInt8] = []
        func put32(_ v: UInt32) { bytes += withUnsafeBytes(of: v.littleEndian, Array.init) }
        func put16(_ v: UInt16) { bytes += withUnsafeBytes(of: v.littleEndian, Array.init) }
        put32(36); put16(type); put16(0); put32(sequence); put32(0)
        put32(UInt32(bitPattern: error))
        bytes += [UInt8](repeating: 0, count: 16)                  // the echoed request header
        return bytes
    }

    @Test func repliesMapToAckErrnoOrUnrelated() {
        errorMessage(sequence: 9, error: 0).withUnsafeBytes {
            #expect(NetlinkReply.scan($0, sequence: 9) == .acknowledged)
        }
        errorMessage(sequence: 9, error: -EEXIST).withUnsafeBytes {
            #expect(NetlinkReply.scan($0, sequence: 9) == .failed(.fileExists))
        }
        errorMessage(sequence: 8, error: -EEXIST).withUnsafeBytes {
            #expect(NetlinkReply.scan($0, sequence: 9) == .unrelated)
        }
        errorMessage(sequence: 9, error: 0, type: UInt16(RTM_NEWLINK)).withUnsafeBytes {
            #expect(NetlinkReply.scan($0, sequence: 9) == .unrelated)
        }
        // A second message in the same datagram is found after the first.
        (errorMessage(sequence: 3, error: 0) + errorMessage(sequence: 9, error: -ENODEV)).withUnsafeBytes {
            #expect(NetlinkReply.scan($0, sequence: 9) == .failed(.noSuchDevice))
        }
    }

    @Test func truncatedRepliesAreRejectedAtEveryLength() {
        let full = errorMessage(sequence: 9, error: 0)
        for length in 16..<full.count {
            Array(full.prefix(length)).withUnsafeBytes {
                #expect(NetlinkReply.scan($0, sequence: 9) == .failed(.protocolError), "length \(length)")
            }
        }
        for length in 0..<16 {
            Array(full.prefix(length)).withUnsafeBytes {
                #expect(NetlinkReply.scan($0, sequence: 9) == .unrelated, "length \(length)")
            }
        }
    }

    @Test func addressText() {
        #expect(SysIPAddress("10.77.0.1") == .v4(0x0A4D_0001))
        #expect(SysIPAddress("fd00:77::1") == .v6(high: 0xFD00_0077_0000_0000, low: 1))
        #expect(SysIPAddress(bytes: [10, 77, 0, 2]) == .v4(0x0A4D_0002))
        #expect(SysIPAddress("10.77.0") == nil)
        #expect(SysIPAddress.v4(0x0A4D_0001).description == "10.77.0.1")
        #expect(SysIPAddress.v6(high: 0xFD00_0077_0000_0000, low: 2).description == "fd00:77::2")
        let route = SysRoute(destination: .v4(0x0A4E_0000), prefixLength: 16, gateway: .v4(0x0A4D_00FE), outputInterface: 3, table: 100)
        #expect(route.description == "10.78.0.0/16 via 10.77.0.254 dev #3 table 100")
        #expect(SysRule(family: .v4, mark: 0x77, table: 100, priority: 1000).description == "1000: from all fwmark 0x77 lookup 100")
        #expect(SysRule(destination: .v4(0xC0A8_0100), length: 24, table: SysRule.mainTable, priority: 99).description
            == "99: from all to 192.168.1.0/24 lookup main")
    }
}
