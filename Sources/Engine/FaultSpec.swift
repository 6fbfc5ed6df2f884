internal import Stack

/// `--faults drop=0.02,reorder=0.02,duplicate=0.01,corrupt=0,delay=1ms,rate=10mbit`:
/// the fault injector's plan as a user writes it.
enum FaultSpec {
    static func parse(_ text: String) throws(EngineError) -> FaultInjector.Plan {
        var plan = FaultInjector.Plan()
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1).map { String($0.filter { $0 != " " }) }
            guard parts.count == 2 else {
                throw .usage("--faults: '\(item)' is not NAME=VALUE; for example --faults drop=0.02,reorder=0.02")
            }
            let (name, value) = (parts[0], parts[1])
            if name == "delay" {
                guard value.hasSuffix("ms"), let ms = Int64(value.dropLast(2)), ms >= 0, ms <= 10_000 else {
                    throw .usage("--faults: delay wants milliseconds like 'delay=5ms', got '\(value)'")
                }
                plan.delay = .milliseconds(ms)
                continue
            }
            if name == "rate" {
                guard let rate = parseRate(value) else {
                    throw .usage("--faults: rate wants bits a second like 'rate=10mbit' (bit, kbit, mbit, gbit; 8kbit to 100gbit), got '\(value)'")
                }
                plan.bitsPerSecond = rate
                continue
            }
            guard let p = Double(value), p >= 0, p <= 1 else {
                throw .usage("--faults: \(name) wants a probability from 0 to 1, got '\(value)'")
            }
            switch name {
            case "drop": plan.drop = p
            case "duplicate": plan.duplicate = p
            case "reorder": plan.reorder = p
            case "corrupt": plan.corrupt = p
            default:
                throw .usage("--faults: unknown fault '\(name)'; known: drop, duplicate, reorder, corrupt, delay, rate")
            }
        }
        return plan
    }

    /// `10mbit`, `512kbit`, `1gbit`, `64000bit` (tc's units: powers of 1000), or bare bits.
    static func parseRate(_ text: String) -> Int? {
        let lower = text.lowercased()
        let units: [(String, Int)] = [("gbit", 1_000_000_000), ("mbit", 1_000_000), ("kbit", 1_000), ("bit", 1)]
        var number = Substring(lower), scale = 1
        for (suffix, factor) in units where lower.hasSuffix(suffix) {
            number = lower.dropLast(suffix.count)
            scale = factor
            break
        }
        guard let value = Double(number), value.isFinite, value > 0 else { return nil }
        let bits = value * Double(scale)
        guard bits >= 8_000, bits <= 100_000_000_000 else { return nil }
        return Int(bits)
    }
}

