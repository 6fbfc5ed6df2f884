internal import Sys

/// Holds `sluice exec`'s command until the tunnel runs. The command's
/// process starts with the namespace (it enters it and binds its
/// resolv.conf while Sluice builds the tunnel), then waits on its end of a
/// socket pair (`Launcher.exec`'s `gate`, its descriptor 3) for one byte.
/// Without the wait the command ran before Sluice had set the TUN's
/// offloads, listened on its forwarded ports or applied the profile: its
/// first packets carried checksums Sluice no longer asked for, and
/// `ethtool` in the command could see the offload still off.
final class CommandGate {
    private let channel: DescriptorChannel
    private var opened = false

    /// Our end of the pair; the command's process holds the other.
    init(_ channel: consuming DescriptorChannel) {
        self.channel = channel
    }

    /// Lets the command start. A gate dropped unopened (Sluice failed before
    /// its loop) closes our end, and the waiting process ends unstarted.
    func open() {
        guard !opened else { return }
        opened = true
        try? channel.send([UInt8(ascii: "G")])
    }
}
