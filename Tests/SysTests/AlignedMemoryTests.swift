import Sys
import Testing

@Suite struct AlignedMemoryTests {
    @Test func bigBuffersAreHugePageAlignedAndSmallOnesAsAsked() {
        for (size, alignment, expected) in [(4 << 20, 64, 2 << 20), (16 << 20, 4096, 2 << 20), (1 << 20, 4096, 4096), (4096, 64, 64)] {
            let memory = AlignedMemory.allocate(byteCount: size, alignment: alignment)
            defer { memory.deallocate() }
            #expect(Int(bitPattern: memory) % expected == 0, "\(size) bytes at \(memory)")
            // Every byte is usable.
            memory.initializeMemory(as: UInt8.self, repeating: 7, count: size)
            #expect(memory.load(fromByteOffset: size - 1, as: UInt8.self) == 7)
        }
    }
}
