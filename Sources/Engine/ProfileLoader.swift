internal import Sys
internal import Stack
internal import Wire
public import Rules

/// Reads a profile file and parses it: the one place the engine turns a path
/// into a `Profile`, for `check` now and for reloads later. A profile with an
/// error is never returned, so a failed reload keeps the old one.
public enum ProfileLoader {
    /// Loads `path`; relative paths inside the profile resolve against its folder.
    public static func load(_ path: String) -> Result<Profile, ProfileErrors> {
        guard let bytes = Files.read(path, limit: ProfileParser.maximumSize + 1) else {
            return .failure(ProfileErrors(errors: [ProfileError(
                file: path, line: 0, message: "cannot read the profile", hint: "check that the file exists and is readable")]))
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(ProfileErrors(errors: [ProfileError(
                file: path, line: 0, message: "the profile is not UTF-8 text", hint: "save it as UTF-8")]))
        }
        return ProfileParser.parse(text, file: path, baseDirectory: folder(of: path), readFile: readFile)
    }

    /// A file the profile names (a RULE-SET or DOMAIN-SET list, the GeoIP
    /// database), read again at every load: a reload picks up an edited list.
    static func readFile(_ path: String) -> ProfileFile {
        if Files.kind(of: path) == .directory { return .unreadable("it is a folder") }
        let limit = max(RuleSet.maximumFileSize, MaxMindDatabase.maximumFileSize)
        guard let bytes = Files.read(path, limit: limit + 1) else {
            return .unreadable(Files.kind(of: path) == nil ? "no such file" : "not readable")
        }
        guard bytes.count <= limit else { return .unreadable("larger than \(limit >> 20) MiB") }
        return .bytes(bytes)
    }

    /// The absolute folder that holds `path`.
    static func folder(of path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : (Files.currentDirectory() ?? "/") + "/" + path
        guard let slash = absolute.lastIndex(of: "/") else { return "/" }
        let folder = String(absolute[..<slash])
        return folder.isEmpty ? "/" : folder
    }

    /// Findings that need the file system, which the pure parser cannot see:
    /// Map Local files and folders that do not exist (yet). Warnings, not
    /// errors: the files may be created after the profile is loaded.
    public static func fileWarnings(_ profile: Profile) -> [ProfileError] {
        var warnings: [ProfileError] = []
        for entry in profile.mapLocals {
            switch entry.data {
            case let .file(path):
                if Files.kind(of: path) != .file {
                    warnings.append(ProfileError(file: profile.file, line: entry.line, severity: .warning,
                                                 message: "\(path) is not a file", hint: "requests for it will get 404 until it exists"))
                }
            case let .directory(path):
                if Files.kind(of: path) != .directory {
                    warnings.append(ProfileError(file: profile.file, line: entry.line, severity: .warning,
                                                 message: "\(path) is not a folder", hint: "requests for it will get 404 until it exists"))
                }
            case .text, .base64, .tinyGIF:
                continue
            }
        }
        return warnings
    }
}

extension ProfileLoader {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// `load` for the commands that run a tunnel: errors as one report.
    static func loadForRun(_ path: String) throws(Failure) -> Profile {
        switch load(path) {
        case let .success(profile): return profile
        case let .failure(errors): throw Failure(description: errors.description)
        }
    }

    /// [General]'s DNS settings from Surge: always-real-ip names are left to
    /// the host's resolvers (real addresses), ipv6 = false answers no AAAA,
    /// exclude-simple-hostnames decides where one-label names go.
    static func applyGeneral(_ general: GeneralSettings, to configuration: inout FakeDNSConfiguration) {
        var exclusions = FakeDNSConfiguration.defaultExclusions
        for name in general.realIPNames {
            if let pattern = DNSNamePattern(name) { exclusions.insert(pattern) }
        }
        configuration.exclusions = exclusions
        configuration.aaaaPolicy = general.ipv6 ? .fake : .empty
        configuration.forwardsSingleLabelNames = general.excludeSimpleHostnames
    }

    /// The profile's [Host] section as the DNS server's static table.
    static func hostTable(_ profile: Profile) -> DNSHostTable {
        var table = DNSHostTable()
        for entry in profile.hosts {
            guard let pattern = DNSNamePattern(entry.name) else { continue }
            switch entry.value {
            case let .addresses(list): table.insert(pattern, .addresses(list))
            case let .alias(target):
                guard let name = DNSName(target) else { continue }
                table.insert(pattern, .alias(name))
            case .server: table.insert(pattern, .delegated)
            }
        }
        return table
    }
}
