internal import Sys

/// The Engine layer. Its contents arrive with issue #4 (the event loop);
/// until then this marker keeps the target and its place in the import graph.
public enum EngineLayer {
    public static let name = "Engine"
}
