internal import Stack

/// `--faults drop=0.02,reorder=0.02,duplicate=0.01,corrupt=0,delay=1ms`:
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
            guard let p = Double(value), p >= 0, p <= 1 else {
                throw .usage("--faults: \(name) wants a probability from 0 to 1, got '\(value)'")
            }
            switch name {
            case "drop": plan.drop = p
            case "duplicate": plan.duplicate = p
            case "reorder": plan.reorder = p
            case "corrupt": plan.corrupt = p
            default:
                throw .usage("--faults: unknown fault '\(name)'; known: drop, duplicate, reorder, corrupt, delay")
            }
        }
        return plan
    }
}

