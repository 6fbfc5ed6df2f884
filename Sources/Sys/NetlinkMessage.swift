// NetlinkMessage exists to lay out one rtnetlink request in a reusable
// buffer with the kernel's alignment rules (NLMSG_ALIGN after the family
// header, RTA_ALIGN after each attribute), and to read the kernel's answer.
// Fixed-size pieces are the kernel's own C structs, so field names match
// rtnetlink(7); integers are host order, addresses network order.
import CShim
import Glibc

struct NetlinkMessage {
    private let buffer: UnsafeMutableRawBufferPointer
    private(set) var length: Int

    /// Starts a message: the nlmsghdr, with its length filled in by finish().
    init(in buffer: UnsafeMutableRawBufferPointer, type: Int, flags: Int32, sequence: UInt32) throws(Errno) {
        self.buffer = buffer
        self.length = 0
        var header = nlmsghdr()
        header.nlmsg_type = UInt16(type)
        header.nlmsg_flags = UInt16(flags)
        header.nlmsg_seq = sequence
        header.nlmsg_pid = 0
        try append(header, alignedTo: Int(cshim_nlmsg_align(Int32(MemoryLayout<nlmsghdr>.size))))
    }

    /// Appends the family header (ifinfomsg, ifaddrmsg, rtmsg, fib_rule_hdr).
    mutating func appendHeader<T>(_ value: T) throws(Errno) {
        try append(value, alignedTo: Int(cshim_nlmsg_align(Int32(MemoryLayout<T>.size))))
    }

    /// Appends one rtattr: 4-byte header, payload, zero padding to RTA_ALIGN.
    mutating func appendAttribute(type: Int, payload: UnsafeRawBufferPointer) throws(Errno) {
        let attributeLength = Int(cshim_rta_length(Int32(payload.count)))
        let padded = Int(cshim_rta_align(Int32(attributeLength)))
        guard length + padded <= buffer.count else { throw Errno.noBufferSpace }
        var header = rtattr()
        header.rta_len = UInt16(attributeLength)
        header.rta_type = UInt16(type)
        let start = length
        withUnsafeBytes(of: &header) { bytes in
            buffer.baseAddress!.advanced(by: start).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        let payloadStart = start + (attributeLength - payload.count)
        if let source = payload.baseAddress, payload.count > 0 {
            buffer.baseAddress!.advanced(by: payloadStart).copyMemory(from: source, byteCount: payload.count)
        }
        let end = start + padded
        (buffer.baseAddress! + payloadStart + payload.count).initializeMemory(
            as: UInt8.self, repeating: 0, count: end - payloadStart - payload.count)
        length = end
    }

    mutating func appendAttribute(type: Int, u32 value: UInt32) throws(Errno) {
        var value = value
        try withUnsafeBytes(of: &value) { (bytes) throws(Errno) in try appendAttribute(type: type, payload: bytes) }
    }

    mutating func appendAttribute(type: Int, address: SysIPAddress) throws(Errno) {
        try address.withNetworkBytes { (bytes) throws(Errno) in try appendAttribute(type: type, payload: bytes) }
    }

    /// Writes nlmsg_len and returns the bytes to send.
    func finish() -> UnsafeRawBufferPointer {
        buffer.storeBytes(of: UInt32(length), toByteOffset: 0, as: UInt32.self)
        return UnsafeRawBufferPointer(rebasing: buffer[0..<length])
    }

    private mutating func append<T>(_ value: T, alignedTo padded: Int) throws(Errno) {
        guard length + padded <= buffer.count else { throw Errno.noBufferSpace }
        let start = length
        var value = value
        withUnsafeBytes(of: &value) { bytes in
            buffer.baseAddress!.advanced(by: start).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        let written = MemoryLayout<T>.size
        (buffer.baseAddress! + start + written).initializeMemory(as: UInt8.self, repeating: 0, count: padded - written)
        length = start + padded
    }
}

/// What one received netlink message says about request `sequence`.
enum NetlinkReply: Equatable {
    /// NLMSG_ERROR with error 0.
    case acknowledged
    /// NLMSG_ERROR with a negative errno.
    case failed(Errno)
    /// Another message, or one for a different request: keep reading.
    case unrelated
}

extension NetlinkReply {
    /// Walks the messages in one datagram and returns the verdict on `sequence`,
    /// or `.unrelated` if none of them carries it. A datagram too short for
    /// what its headers claim is treated as a failure, never read past.
    static func scan(_ datagram: UnsafeRawBufferPointer, sequence: UInt32) -> NetlinkReply {
        let headerSize = MemoryLayout<nlmsghdr>.size
        var offset = 0
        while offset + headerSize <= datagram.count {
            let messageLength = Int(datagram.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            let type = datagram.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self)
            let messageSequence = datagram.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            guard messageLength >= headerSize, offset + messageLength <= datagram.count else {
                return .failed(.protocolError)
            }
            if messageSequence == sequence && Int32(type) == NLMSG_ERROR {
                guard messageLength >= headerSize + 4 else { return .failed(.protocolError) }
                let error = datagram.loadUnaligned(fromByteOffset: offset + headerSize, as: Int32.self)
                return error == 0 ? .acknowledged : .failed(Errno(rawValue: -error))
            }
            offset += Int(cshim_nlmsg_align(Int32(messageLength)))
        }
        return .unrelated
    }
}
