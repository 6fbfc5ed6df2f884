// AlignedMemory exists because the capture's two big buffers (the ring the
// loop writes every packet into, and the writer's O_DIRECT staging buffer)
// are swept end to end at line rate: on 2 MiB huge pages they take 8 TLB
// entries per 16 MiB instead of 4,096. With THP in `madvise` mode, as on
// these machines, the kernel gives huge pages only to memory that asks.
import Glibc

public enum AlignedMemory {
    public static let hugePageSize = 2 << 20

    /// `byteCount` bytes aligned to `alignment`; from 2 MiB up, aligned to
    /// 2 MiB and advised MADV_HUGEPAGE (a hint: without THP they are plain
    /// pages). Free with `deallocate()`.
    public static func allocate(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer {
        guard byteCount >= hugePageSize else {
            return UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: alignment)
        }
        let memory = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: max(alignment, hugePageSize))
        _ = madvise(memory, byteCount, MADV_HUGEPAGE)
        return memory
    }
}
