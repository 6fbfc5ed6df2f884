// Big-endian loads and stores on raw buffers. Callers check bounds once, when a
// view is validated; these helpers then read at offsets known to be in range.
// `loadUnaligned` because packet fields sit at any alignment.

extension UnsafeRawBufferPointer {
    @inlinable @inline(__always)
    public func u8(_ offset: Int) -> UInt8 { self[offset] }

    @inlinable @inline(__always)
    public func u16(_ offset: Int) -> UInt16 {
        UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    @inlinable @inline(__always)
    public func u32(_ offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// A view of `count` bytes from `offset`, based at index 0, so that no
    /// caller ever has to remember a slice's start index.
    @inlinable @inline(__always)
    public func sub(_ offset: Int, _ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[offset ..< offset + count])
    }

    @inlinable @inline(__always)
    public func suffix(from offset: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[offset...])
    }
}

extension UnsafeMutableRawBufferPointer {
    @inlinable @inline(__always)
    public func setU8(_ offset: Int, _ value: UInt8) { self[offset] = value }

    @inlinable @inline(__always)
    public func setU16(_ offset: Int, _ value: UInt16) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt16.self)
    }

    @inlinable @inline(__always)
    public func setU32(_ offset: Int, _ value: UInt32) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
    }

    @inlinable @inline(__always)
    public func sub(_ offset: Int, _ count: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: self[offset ..< offset + count])
    }
}

/// Throws `.truncated` unless `buffer` holds at least `needed` bytes.
@inlinable @inline(__always)
public func require(_ needed: Int, in buffer: UnsafeRawBufferPointer, _ layer: WireError.Layer) throws(WireError) {
    if buffer.count < needed {
        throw .truncated(layer: layer, needed: needed, available: buffer.count)
    }
}

/// Throws `.truncated` unless an output buffer can take `needed` bytes.
@inlinable @inline(__always)
public func require(_ needed: Int, in buffer: UnsafeMutableRawBufferPointer, _ layer: WireError.Layer) throws(WireError) {
    if buffer.count < needed {
        throw .malformed(layer: layer, reason: .bufferTooSmall)
    }
}
