internal import Sys

/// `sluice ca [--dir DIR]`: makes Sluice's interception CA if there is none
/// yet, and says where it is, its fingerprint, and how to trust it.
public struct CACommand {
    public struct Options: Sendable, Equatable {
        public var directory: String?
        public init(directory: String? = nil) { self.directory = directory }
    }

    public let options: Options

    public init(options: Options) { self.options = options }

    public static func parse(_ arguments: ArraySlice<String>) -> Result<Options, UsageError> {
        var options = Options()
        var rest = arguments
        while let first = rest.popFirst() {
            switch first {
            case "--dir", "--ca-dir":
                // --ca-dir as exec, run and proxy name it (their messages say so).
                guard let value = rest.popFirst() else { return .failure(UsageError("sluice ca: \(first) needs a folder")) }
                options.directory = value
            default:
                return .failure(UsageError("sluice ca: unknown option '\(first)' (sluice ca [--dir DIR])"))
            }
        }
        return .success(options)
    }

    public func run(print: (String) -> Void, complain: (String) -> Void) -> Int32 {
        let directory = options.directory ?? InterceptionCA.defaultDirectory
        let ca: InterceptionCA
        do { ca = try InterceptionCA.load(directory: directory, create: true) } catch {
            complain("sluice: error: ca: \(error)")
            return 1
        }
        print(ca.created ? "made a new CA" : "the CA exists")
        print("ca.pem: \(ca.certificatePath)")
        print("ca.key: \(ca.keyPath) (keep it private: it can impersonate any site to whoever trusts ca.pem)")
        print("SHA-256 fingerprint: \(ca.fingerprint)")
        print("""
        `sluice exec` gives ca.pem to its command by itself when the profile has [MITM] hostnames.
        Elsewhere (run --netns, run --tun), trust it where the apps look:
          Debian: cp \(ca.certificatePath) /usr/local/share/ca-certificates/sluice.crt && update-ca-certificates
          one program: SSL_CERT_FILE=\(ca.certificatePath) (or curl --cacert, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE)
        """)
        return 0
    }
}
