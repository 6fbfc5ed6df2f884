internal import HTTP

/// The Rules layer. Its contents arrive with issue #6 (profile parser, matchers, rewrites);
/// until then this marker keeps the target and its place in the import graph.
public enum RulesLayer {
    public static let name = "Rules"
}
