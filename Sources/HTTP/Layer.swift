internal import Wire

/// The HTTP layer. Its contents arrive with issue #6 (HTTP/1.x parser, SNI sniffer, HAR model);
/// until then this marker keeps the target and its place in the import graph.
public enum HTTPLayer {
    public static let name = "HTTP"
}
