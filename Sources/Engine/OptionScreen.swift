/// A first look at a command's options, before its own parser reads them:
/// `--help` and `-h` ask for the command's usage, and an option that takes a
/// value must have one. Each parser takes the next word as the value, so a
/// dropped value used to take the next option for it (`exec --pcap
/// --no-control` wrote a capture named "--no-control"; `--flow-log --pcap
/// x.pcap` then ran x.pcap as the command).
public enum OptionScreen {
    public enum Verdict: Equatable, Sendable {
        /// Nothing to say: the command's parser goes on.
        case proceed
        /// Print the command's usage and exit 0.
        case help
        /// A usage error (exit 2).
        case refuse(String)
    }

    /// The options of `command` that take a value (the next word).
    public static func valueOptions(of command: String) -> Set<String> {
        let capture: Set<String> = ["--pcap", "--pcap-per-flow", "--flow-log", "--har", "--har-body-limit", "--pcap-filter",
                                    "--snaplen", "--pcap-rotate-size", "--pcap-rotate-count"]
        let control: Set<String> = ["--control"]
        switch command {
        case "exec":
            return capture.union(control).union(["--profile", "--mtu", "--busy-poll", "--faults", "--fault-seed", "--forward", "--ca-dir", "--dns"])
        case "run":
            return capture.union(control).union(["--netns", "--pid", "--dns", "--mtu", "--busy-poll", "--exclude", "--forward", "--profile", "--ca-dir"])
        case "dump": return ["--count", "--seconds", "--mtu"]
        case "check": return ["--dump"]
        case "match": return ["--method", "--header", "--process", "--uid", "--source"]
        case "proxy":
            return control.union(["--listen", "--http-listen", "--profile", "--auth", "--har", "--har-body-limit", "--flow-log", "--ca-dir"])
        case "replay": return ["--profile", "--format"]
        case "ca": return ["--dir", "--ca-dir"]
        case "status", "flows", "close", "select", "reload": return control
        case "top": return control.union(["--interval", "--count"])
        case "requests": return control.union(["--last", "--count"])
        default: return []
        }
    }

    /// exec and dump end their options at the first word that is not one:
    /// CMD's, whose own `--help` is CMD's business.
    static func takesCommand(_ command: String) -> Bool { command == "exec" || command == "dump" }

    /// Looks at `arguments` (what follows the command's name).
    public static func screen(_ command: String, _ arguments: ArraySlice<String>) -> Verdict {
        let values = valueOptions(of: command)
        var rest = arguments
        var seen: Set<String> = []
        while let word = rest.popFirst() {
            if word == "--" || !word.hasPrefix("-") && takesCommand(command) { break }
            seen.insert(word)
            if word == "--help" || word == "-h" { return .help }
            if ["-v", "--verbose", "-q", "--quiet"].contains(word) {
                return .refuse("sluice \(command): \(word) goes before the command: sluice \(word) \(command) …")
            }
            if values.contains(word) {
                guard let value = rest.popFirst() else { return .refuse("sluice \(command): \(word) needs a value (see sluice \(command) --help)") }
                if value.hasPrefix("--") {
                    return .refuse("sluice \(command): \(word) needs a value, but the next word is the option \(value) (see sluice \(command) --help)")
                }
                continue
            }
        }
        if seen.contains("--control"), seen.contains("--no-control") {
            return .refuse("sluice \(command): --control and --no-control contradict each other; give one")
        }
        if seen.contains("--fault-seed"), !seen.contains("--faults") {
            return .refuse("sluice \(command): --fault-seed seeds --faults, which is not given; for example --faults drop=0.02 --fault-seed 7")
        }
        return .proceed
    }

    /// The part of `usage` that describes `command`: each entry whose first
    /// line starts with it (run has two), through its indented lines.
    public static func section(of usage: String, for command: String) -> String? {
        var kept: [Substring] = []
        var inside = false
        for line in usage.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  "), !line.hasPrefix("   ") {
                // An entry's first line: "  exec [--profile FILE] …", "  close ID | select GROUP MEMBER | reload …".
                let words = line.split(separator: " ").map(String.init)
                inside = words.first == command || words.contains("|") && words.contains(command)
            } else if !line.hasPrefix("  ") {
                inside = false
            }
            if inside { kept.append(line) }
        }
        guard !kept.isEmpty else { return nil }
        return "usage: sluice [-v | -q] COMMAND [OPTIONS]\n\n" + kept.joined(separator: "\n")
    }
}
