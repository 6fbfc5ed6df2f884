/// The sections of the dialect, as their headers spell them.
enum ProfileSection: String, CaseIterable {
    case general = "General"
    case proxy = "Proxy"
    case proxyGroup = "Proxy Group"
    case rule = "Rule"
    case host = "Host"
    case urlRewrite = "URL Rewrite"
    case headerRewrite = "Header Rewrite"
    case bodyRewrite = "Body Rewrite"
    case mapLocal = "Map Local"
    case statistics = "Statistics"
    case capture = "Capture"
    case mitm = "MITM"

    /// Surge sections a pasted profile may carry that Sluice has no use for;
    /// each is a warning that says why (its lines are skipped), so the
    /// profile loads, rather than an unknown section's error.
    static let unsupported: [String: String] = [
        "Script": "Sluice runs no scripts; use [URL Rewrite], [Header Rewrite] and [Map Local]",
        "Replica": "Sluice records flows through [Capture] (pcap and HAR)",
        "SSID Setting": "Sluice has no Wi-Fi settings",
        "Panel": "Sluice has no panels",
        "WireGuard": "Sluice relays through socks5 and http proxies only",
    ]
}
