internal import Wire

/// The Stack layer. Its contents arrive with issue #3 (TCP state machine, reassembly, flow table);
/// until then this marker keeps the target and its place in the import graph.
public enum StackLayer {
    public static let name = "Stack"
}
