// `sluice-bench capture`: what PacketRecorder.record() costs the event loop
// per packet. Packets go in batches that fit the ring, and the clock runs only
// around the record() calls, so the figure is the loop's cost (clock read,
// copy, publish) and not the writer's. The writer writes to /dev/null: its
// speed is the disk's business and shows up as drops, reported separately.
import Capture

func benchCapture(rounds: Int, ringCapacity: Int) {
    for size in [64, 1500] {
        let packet = [UInt8](repeating: 0x45, count: size)
        let recorder: PacketRecorder
        do { recorder = try PacketRecorder(path: "/dev/null", ringCapacity: ringCapacity) } catch {
            print("capture benchmark: \(error)")
            return
        }
        // A batch fills at most half the ring, so record() never finds it full.
        let batch = min(4096, ringCapacity / 2 / (size + 32)), batches = 64 * 4096 / batch
        var times: [Double] = []
        let clock = ContinuousClock()
        packet.withUnsafeBytes { bytes in
            for _ in 0 ..< rounds {
                var elapsed = Duration.zero
                for _ in 0 ..< batches {
                    let start = clock.now
                    for i in 0 ..< batch { recorder.record(bytes, outbound: i & 1 == 0) }
                    elapsed += clock.now - start
                    // Let the writer empty the ring before the next batch (bounded: 2 s).
                    let deadline = clock.now + .seconds(2)
                    let target = recorder.statistics.packetsRecorded - recorder.statistics.packetsDropped
                    while recorder.statistics.packetsCaptured < target, clock.now < deadline { }
                }
                times.append(elapsed.nanosecondsDouble / Double(batch * batches))
            }
        }
        let statistics = recorder.close()
        print("capture benchmark: record() of a \(size)-byte packet, ring \(ringCapacity >> 10) KiB, \(rounds) rounds of \(batch * batches) (median ns/packet): "
            + "\(format1(median(times))) ns; \(statistics.packetsDropped) of \(statistics.packetsRecorded) dropped")
    }
}

/// N record() calls, untimed, for valgrind's allocation count (tools/bench capture).
func captureLoop(_ n: Int) {
    let packet = [UInt8](repeating: 0x45, count: 1500)
    guard let recorder = try? PacketRecorder(path: "/dev/null") else { return }
    packet.withUnsafeBytes { bytes in
        for i in 0 ..< n { recorder.record(bytes, outbound: i & 1 == 0) }
    }
    let statistics = recorder.close()
    print("capture-loop: \(n) packets, \(statistics)")
}
