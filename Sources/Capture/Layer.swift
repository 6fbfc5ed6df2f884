internal import Sys

/// The Capture layer. Its contents arrive with issue #7 (pcap, HAR and flow-log writers);
/// until then this marker keeps the target and its place in the import graph.
public enum CaptureLayer {
    public static let name = "Capture"
}
