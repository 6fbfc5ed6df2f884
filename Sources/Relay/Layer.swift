internal import HTTP

/// The Relay layer. Its contents arrive with issue #5 (SOCKS5 and HTTP proxy state machines);
/// until then this marker keeps the target and its place in the import graph.
public enum RelayLayer {
    public static let name = "Relay"
}
