internal import Rules
internal import Wire

/// `sluice match FILE URL [--method M] [--header 'K: V']... [--process P] [--uid N] [--source IP]`: loads a profile
/// (through ProfileLoader, as a run would) and prints how it would treat one HTTP request (ProfileExplainer), without
/// starting anything. Exit status: 0 explained, 1 the profile has errors, 2 usage.
public struct MatchCommand {
    public struct Options: Sendable, Equatable {
        public var file: String
        public var url: String
        public var method = "GET"
        /// "Name: value" pairs, in order.
        public var headers: [(name: String, value: String)] = []
        /// Who asks, for PROCESS-NAME, PROCESS-PATH and UID rules: a program's
        /// path (or bare file name) and a uid; nil: nobody known.
        public var process: String?
        public var userID: UInt32?
        /// Where the request comes from, for SRC-IP rules (an address, checked
        /// when parsed); nil: unknown.
        public var source: String?

        public init(file: String, url: String) { self.file = file; self.url = url }

        public static func == (a: Options, b: Options) -> Bool {
            a.file == b.file && a.url == b.url && a.method == b.method && a.process == b.process && a.userID == b.userID && a.source == b.source
                && a.headers.map { "\($0.name)\u{0}\($0.value)" } == b.headers.map { "\($0.name)\u{0}\($0.value)" }
        }
    }

    public let options: Options

    public init(options: Options) { self.options = options }

    /// Parses what follows `match`; the error is the message for stderr.
    public static func parse(_ arguments: ArraySlice<String>) -> Result<Options, MatchUsageError> {
        var positional: [String] = []
        var method = "GET"
        var headers: [(name: String, value: String)] = []
        var process: String?
        var userID: UInt32?
        var source: String?
        var rest = arguments
        while let first = rest.first {
            rest.removeFirst()
            switch first {
            case "--method", "-X":
                guard let value = rest.first, !value.isEmpty else { return .failure(MatchUsageError("--method needs a method, for example POST")) }
                rest.removeFirst()
                method = value.uppercased()
            case "--header", "-H":
                guard let value = rest.first else { return .failure(MatchUsageError("--header needs 'Name: value'")) }
                rest.removeFirst()
                guard let colon = value.firstIndex(of: ":"), colon != value.startIndex else {
                    return .failure(MatchUsageError("--header wants 'Name: value', got '\(value)'"))
                }
                let name = String(value[..<colon]).trimmingBlanks
                let body = String(value[value.index(after: colon)...]).trimmingBlanks
                guard !name.isEmpty, !name.contains(" ") else { return .failure(MatchUsageError("--header wants 'Name: value', got '\(value)'")) }
                headers.append((name, body))
            case "--process":
                guard let value = rest.first, !value.isEmpty else {
                    return .failure(MatchUsageError("--process needs a program, for example /usr/bin/curl"))
                }
                rest.removeFirst()
                process = value
            case "--uid":
                guard let value = rest.first.flatMap({ UInt32($0) }) else {
                    return .failure(MatchUsageError("--uid needs a number, for example 1000 (`id -u NAME` prints a user's)"))
                }
                rest.removeFirst()
                userID = value
            case "--source":
                guard let value = rest.first, IPAddress(value) != nil else {
                    return .failure(MatchUsageError("--source needs an IP address, for example 192.168.1.20 (for SRC-IP rules)"))
                }
                rest.removeFirst()
                source = value
            default:
                if first.hasPrefix("-"), first.count > 1 { return .failure(MatchUsageError("unknown option '\(first)' (see sluice help)")) }
                positional.append(first)
            }
        }
        guard positional.count == 2 else {
            return .failure(MatchUsageError("want a profile and a URL, for example: sluice match sluice.conf http://api.test/v1/users --method POST"))
        }
        var options = Options(file: positional[0], url: positional[1])
        options.method = method
        options.headers = headers
        options.process = process
        options.userID = userID
        options.source = source
        return .success(options)
    }

    /// Prints the explanation (or the profile's errors through `complain`) and
    /// returns the exit status.
    /// The owner `--process` and `--uid` describe: a path gives the name and
    /// the path, a bare name the name alone; the uid is 0 unless given.
    var owner: FlowOwner? {
        guard options.process != nil || options.userID != nil else { return nil }
        var owner = FlowOwner(userID: options.userID ?? 0)
        if let process = options.process {
            if process.contains("/") {
                owner.processPath = process
                owner.processName = process.split(separator: "/").last.map(String.init)
            } else {
                owner.processName = process
            }
        }
        return owner
    }

    public func run(print: (String) -> Void, complain: (String) -> Void) -> Int32 {
        guard RequestURL(options.url) != nil else {
            complain("sluice match: '\(options.url)' is not an absolute URL (want http://host/path)")
            return 2
        }
        switch ProfileLoader.load(options.file) {
        case let .failure(errors):
            complain(errors.description)
            return 1
        case let .success(profile):
            for warning in profile.warnings { complain(warning.description) }
            let headers = options.headers.map { HeaderField(name: $0.name, value: $0.value) }
            for line in ProfileExplainer.explain(profile, url: options.url, method: options.method, headers: headers, owner: owner,
                                                     source: options.source.flatMap { IPAddress($0) }) {
                print(line)
            }
            return 0
        }
    }
}

public struct MatchUsageError: Error, Sendable, CustomStringConvertible {
    public var message: String
    init(_ message: String) { self.message = message }
    public var description: String { "sluice match: \(message)" }
}

extension String {
    fileprivate var trimmingBlanks: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return String(s)
    }
}
