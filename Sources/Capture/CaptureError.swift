// CaptureError exists so every failure of a capture file, filter or log says
// which file or expression and why, in one line a user can act on.
public import Sys

public enum CaptureError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file could not be opened or created.
    case cannotOpen(path: String, reason: String)
    /// The file opened but libpcap does not recognise it as a capture.
    case notCaptureFile(path: String, reason: String)
    /// A capture whose link layer we cannot turn into IP datagrams.
    case unsupportedLinkType(path: String, linkType: Int32, name: String)
    /// libpcap's compiler rejected the filter expression.
    case badFilter(expression: String, reason: String)
    /// A read from a capture file failed part-way (a truncated record, an I/O error).
    case readFailed(path: String, reason: String)
    /// A write, flush or rotation failed.
    case writeFailed(path: String, reason: String)
    /// An option that cannot work (snaplen 0, a ring smaller than one packet).
    case invalidOption(String)
    /// A system call outside libpcap (thread, eventfd).
    case system(String, Errno)

    public var description: String {
        switch self {
        case let .cannotOpen(path, reason): return "\(path): cannot open: \(reason)"
        case let .notCaptureFile(path, reason): return "\(path): not a capture file (\(reason))"
        case let .unsupportedLinkType(path, linkType, name):
            return "\(path): link type \(name) (\(linkType)) is not supported (raw IP, Ethernet, Linux cooked v1/v2, BSD loopback are)"
        case let .badFilter(expression, reason): return "bad capture filter '\(expression)': \(reason)"
        case let .readFailed(path, reason): return "\(path): read failed: \(reason)"
        case let .writeFailed(path, reason): return "\(path): write failed: \(reason)"
        case let .invalidOption(message): return "capture: \(message)"
        case let .system(call, errno): return "capture: \(call): \(errno)"
        }
    }
}
