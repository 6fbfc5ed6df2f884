import Testing
@testable import Engine
import Stack

/// `--faults`: what a user writes, and what is refused with a hint.
@Suite struct FaultSpecTests {
    @Test func everyFaultAndTheRate() throws {
        let plan = try FaultSpec.parse("drop=0.02,duplicate=0.01,reorder=0.03,corrupt=0,delay=40ms,rate=2mbit")
        #expect(plan.drop == 0.02 && plan.duplicate == 0.01 && plan.reorder == 0.03 && plan.corrupt == 0)
        #expect(plan.delay == .milliseconds(40))
        #expect(plan.bitsPerSecond == 2_000_000)
        #expect(try FaultSpec.parse("drop=0.1").bitsPerSecond == nil)
    }

    @Test func ratesTakeTcsUnits() {
        #expect(FaultSpec.parseRate("10mbit") == 10_000_000)
        #expect(FaultSpec.parseRate("512kbit") == 512_000)
        #expect(FaultSpec.parseRate("1.5Mbit") == 1_500_000)
        #expect(FaultSpec.parseRate("1gbit") == 1_000_000_000)
        #expect(FaultSpec.parseRate("64000bit") == 64_000)
        #expect(FaultSpec.parseRate("64000") == 64_000)
        for bad in ["", "fast", "0mbit", "-1mbit", "4kbit", "200gbit", "10mb", "nanmbit"] {
            #expect(FaultSpec.parseRate(bad) == nil, "\(bad)")
        }
    }

    @Test func mistakesAreUsageErrorsWithAnExample() {
        func message(_ text: String) -> String {
            do {
                _ = try FaultSpec.parse(text)
                return "parsed"
            } catch {
                return "\(error)"
            }
        }
        #expect(message("rate=10mb").contains("rate wants bits a second like 'rate=10mbit'"))
        #expect(message("speed=1").contains("known: drop, duplicate, reorder, corrupt, delay, rate"))
        #expect(message("delay=5").contains("delay wants milliseconds"))
        #expect(message("drop").contains("is not NAME=VALUE"))
    }
}
