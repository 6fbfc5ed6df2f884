internal import Sys

/// Where a running Sluice keeps its files: the resolv.conf `exec` gives its
/// command, and the control socket. Root's is /run/sluice. Anyone else's
/// (`sluice exec` in a user namespace) is $XDG_RUNTIME_DIR/sluice, or
/// /tmp/sluice-UID without one: a folder of the user's own that nobody else
/// may write, since a file planted there would become the command's
/// resolv.conf.
enum RunDirectory {
    static let root = "/run/sluice"

    /// This user's folder (not created).
    static var path: String {
        let uid = ProcessControl.effectiveUserID
        if uid == 0 { return root }
        if let runtime = ProcessControl.environment("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") {
            return runtime + "/sluice"
        }
        return "/tmp/sluice-\(uid)"
    }

    /// The folder, made if missing; nil when it cannot be used (someone
    /// else's, a symbolic link, or writable by others).
    static func prepare() -> String? {
        let path = path
        if path == root {
            Files.makeDirectory(root, mode: 0o755)
            return Files.kind(of: root) == .directory ? root : nil
        }
        return Files.makePrivateDirectory(path) ? path : nil
    }
}
