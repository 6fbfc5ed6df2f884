import HTTP
import TestSupport

/// Both parsers, so one driver can feed either.
protocol IncrementalParser {
    associatedtype Head: Sendable & Equatable
    mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> HTTPParseStep<Head>?
    mutating func finish() throws(HTTPParseError) -> HTTPParseStep<Head>?
}

extension HTTPRequestParser: IncrementalParser {}
extension HTTPResponseParser: IncrementalParser {}

/// What the steps said, rebuilt into messages with the raw bytes each step covered.
struct Message<Head: Equatable>: Equatable {
    var head: Head
    var rawHead: [UInt8]
    var body: [UInt8] = []
    var bodySteps = 0
    var ended = false
    var upgraded = false
}

struct Trace<Head: Equatable>: Equatable {
    var messages: [Message<Head>] = []
    /// Set by `.upgraded`; later bytes are `passthrough`.
    var upgraded = false
    var passthrough: [UInt8] = []
    /// Bytes taken by calls that returned nil (a head in pieces).
    var buffered: [UInt8] = []
    var totalConsumed = 0
}

/// How to cut the input into the pieces fed one by one.
enum Split: CustomStringConvertible {
    case whole
    case byteByByte
    case random(seed: UInt64)

    static let all: [Split] = [.whole, .byteByByte, .random(seed: 1), .random(seed: 2), .random(seed: 99)]

    var description: String {
        switch self {
        case .whole: "whole"
        case .byteByByte: "byte by byte"
        case let .random(seed): "random splits (seed \(seed))"
        }
    }

    func pieces(_ count: Int) -> [Int] {
        switch self {
        case .whole: return count == 0 ? [] : [count]
        case .byteByByte: return Array(repeating: 1, count: count)
        case let .random(seed):
            var rng = SeededRandom(seed: seed)
            var result: [Int] = []
            var left = count
            while left > 0 {
                let n = min(left, 1 + Int(rng.next() % 17))
                result.append(n)
                left -= n
            }
            return result
        }
    }
}


/// Feeds `input` in pieces, calling parse until nil on each rest, as the engine does.
func drive<P: IncrementalParser>(_ parser: inout P, _ input: [UInt8], _ split: Split, finish: Bool = false)
    throws(HTTPParseError) -> Trace<P.Head>
{
    var trace = Trace<P.Head>()
    var offset = 0
    func apply(_ step: HTTPParseStep<P.Head>, _ bytes: ArraySlice<UInt8>) {
        trace.totalConsumed += step.consumed
        switch step {
        case let .head(head, consumed):
            precondition(consumed > 0, "a head takes at least its last byte")
            trace.messages.append(Message(head: head, rawHead: trace.buffered + bytes.prefix(consumed)))
            trace.buffered = []
        case let .body(consumed):
            precondition(consumed > 0, ".body must take bytes")
            if trace.upgraded {
                trace.passthrough += bytes.prefix(consumed)
            } else {
                trace.messages[trace.messages.count - 1].body += bytes.prefix(consumed)
                trace.messages[trace.messages.count - 1].bodySteps += 1
            }
        case let .end(consumed):
            trace.messages[trace.messages.count - 1].body += bytes.prefix(consumed)
            trace.messages[trace.messages.count - 1].ended = true
        case .upgraded:
            precondition(!trace.upgraded, "upgraded twice")
            trace.upgraded = true
            if !trace.messages.isEmpty { trace.messages[trace.messages.count - 1].upgraded = true }
        }
    }
    for piece in split.pieces(input.count) {
        let chunk = Array(input[offset ..< offset + piece])
        offset += piece
        var start = 0
        var rounds = 0
        while true {
            rounds += 1
            precondition(rounds < 100_000, "parser loops")
            let result: Result<HTTPParseStep<P.Head>?, HTTPParseError> = chunk.withUnsafeBytes { all in
                do throws(HTTPParseError) {
                    return .success(try parser.parse(UnsafeRawBufferPointer(rebasing: all[start...])))
                } catch { return .failure(error) }
            }
            let step = try result.get()
            guard let step else {
                trace.buffered += chunk[start...]
                trace.totalConsumed += chunk.count - start
                break
            }
            apply(step, chunk[start...])
            start += step.consumed
        }
    }
    if finish, let step = try parser.finish() { apply(step, []) }
    return trace
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
