import Testing
import Wire

/// A header with data offset chosen to hold `options` (padded with EOL to a
/// multiple of 4, as a sender would), SYN set.
private func segment(options: [UInt8]) -> [UInt8] {
    var area = options
    while area.count % 4 != 0 { area.append(0) }
    let words = UInt8(5 + area.count / 4)
    return [0x9c, 0x40, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, words << 4, 0x02, 0xfa, 0xf0, 0, 0, 0, 0] + area
}

private func parseError(_ bytes: [UInt8]) -> WireError? {
    bytes.withUnsafeBytes { raw in
        do throws(WireError) { _ = try TCPView(raw); return nil } catch { return error }
    }
}

private func parsedOptions(_ options: [UInt8]) throws -> (TCPOptions, [TCPOption]) {
    try segment(options: options).withUnsafeBytes { raw in
        let view = try TCPView(raw)
        return (view.options, Array(view.optionList))
    }
}

private func block(_ left: UInt32, _ right: UInt32) -> TCPSackBlock {
    TCPSackBlock(left: SequenceNumber(left), right: SequenceNumber(right))
}

private let optionLength = WireError.malformed(layer: .tcp, reason: .optionLength)

@Suite struct TCPOptionsTests {
    @Test func optionLengthZeroOrOneIsMalformed() {
        for kind: UInt8 in [2, 3, 4, 5, 8, 30, 254] {
            for length: UInt8 in [0, 1] {
                #expect(parseError(segment(options: [kind, length, 0, 0])) == optionLength, "kind \(kind) length \(length)")
            }
        }
    }

    @Test func optionRunningPastTheHeaderIsMalformed() {
        // MSS claiming 4 bytes with 3 left in the area.
        #expect(parseError(segment(options: [1, 2, 4, 5])) == optionLength)
        // An unknown option longer than the area.
        #expect(parseError(segment(options: [30, 9, 0, 0, 0, 0, 0, 0])) == optionLength)
        // A length octet that is itself past the end.
        #expect(parseError(segment(options: [1, 1, 1, 8])) == optionLength)
        // The same bytes one word longer parse: the option fits again.
        #expect(parseError(segment(options: [30, 8, 0, 0, 0, 0, 0, 0])) == nil)
        // Bytes past the data offset (payload) never count as options.
        #expect(parseError(segment(options: [1, 1, 1, 2]) + [4, 0, 0, 0]) == optionLength)
    }

    @Test func knownOptionWithTheWrongLengthIsMalformed() {
        #expect(parseError(segment(options: [2, 3, 5, 0])) == optionLength)
        #expect(parseError(segment(options: [2, 5, 5, 0, 0, 0, 0, 0])) == optionLength)
        #expect(parseError(segment(options: [3, 4, 7, 0])) == optionLength)
        #expect(parseError(segment(options: [4, 3, 0, 0])) == optionLength)
        #expect(parseError(segment(options: [8, 9] + [UInt8](repeating: 0, count: 8))) == optionLength)
        // SACK: no blocks, a partial block.
        #expect(parseError(segment(options: [5, 2, 0, 0])) == optionLength)
        #expect(parseError(segment(options: [5, 9] + [UInt8](repeating: 0, count: 10))) == optionLength)
        #expect(parseError(segment(options: [5, 14] + [UInt8](repeating: 0, count: 12))) == optionLength)
    }

    @Test func unknownOptionsAreSkippedByTheirLength() throws {
        // An MPTCP-like option (kind 30), then MSS.
        let (options, list) = try parsedOptions([30, 6, 1, 2, 3, 4, 2, 4, 0x05, 0xb4])
        #expect(options == TCPOptions(maximumSegmentSize: 1460))
        #expect(list == [.unknown(kind: 30, length: 6), .maximumSegmentSize(1460), .endOfList])
    }

    @Test func endOfListStopsParsing() throws {
        // After EOL, even bytes that would be malformed options are padding.
        let (options, list) = try parsedOptions([3, 3, 7, 0, 1, 0, 0, 0])
        #expect(options == TCPOptions(windowScale: 7))
        #expect(list == [.windowScale(7), .endOfList])
    }

    @Test func parsesEveryKindInWireOrder() throws {
        let bytes: [UInt8] = [
            2, 4, 0x05, 0xb4, // mss 1460
            1, 3, 3, 14, // nop, wscale 14
            4, 2, // sackOK
            8, 10, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, // TS val 1 ecr 4294967295
            5, 18, 0, 0, 0, 10, 0, 0, 0, 20, 0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0x10, // sack 2
        ]
        let (options, list) = try parsedOptions(bytes)
        #expect(options.maximumSegmentSize == 1460)
        #expect(options.windowScale == 14)
        #expect(options.sackPermitted)
        #expect(options.timestamps == TCPTimestamps(value: 1, echoReply: 0xffff_ffff))
        #expect(Array(options.sackBlocks) == [block(10, 20), block(0xffff_fff0, 0x10)])
        #expect(list.map(\.description) == [
            "mss 1460", "nop", "wscale 14", "sackOK", "TS val 1 ecr 4294967295",
            "sack 2 {10:20}{4294967280:16}", "eol",
        ])
    }

    @Test func emitsInLinuxOrderWithPadding() {
        let ts = TCPTimestamps(value: 1, echoReply: 0)
        let cases: [(TCPOptions, String, Int)] = [
            (TCPOptions(), "", 0),
            (TCPOptions(maximumSegmentSize: 1460, windowScale: 7, sackPermitted: true, timestamps: ts),
             "mss 1460,sackOK,TS val 1 ecr 0,nop,wscale 7", 20),
            (TCPOptions(maximumSegmentSize: 1460, windowScale: 7, sackPermitted: true),
             "mss 1460,nop,nop,sackOK,nop,wscale 7", 12),
            (TCPOptions(timestamps: ts), "nop,nop,TS val 1 ecr 0", 12),
            (TCPOptions(maximumSegmentSize: 536), "mss 536", 4),
            (TCPOptions(windowScale: 0), "nop,wscale 0", 4),
            (TCPOptions(timestamps: ts, sackBlocks: TCPSackBlocks([block(1, 2)])),
             "nop,nop,TS val 1 ecr 0,nop,nop,sack 1 {1:2}", 24),
        ]
        for (options, text, length) in cases {
            #expect(options.description == text)
            #expect(options.encodedLength == length, "\(text)")
            #expect(options.encodedLength % 4 == 0)
        }
    }

    @Test func everyKindRoundTripsThroughAPoisonedBuffer() throws {
        var all: [TCPOptions] = [
            TCPOptions(maximumSegmentSize: 1460, windowScale: 7, sackPermitted: true,
                       timestamps: TCPTimestamps(value: 0xdead_beef, echoReply: 0x0102_0304)),
            TCPOptions(sackPermitted: true),
            TCPOptions(windowScale: 14),
            TCPOptions(maximumSegmentSize: 0xffff),
            TCPOptions(timestamps: TCPTimestamps(value: 0, echoReply: 0)),
        ]
        // SACK blocks with 1 through 4 blocks, alone and (up to 3) with timestamps.
        for n in 1 ... 4 {
            let blocks = TCPSackBlocks((0 ..< n).map { i in block(0xffff_ff00 &+ UInt32(i) * 0x100, 0xffff_ff80 &+ UInt32(i) * 0x100) })
            #expect(blocks.count == n)
            all.append(TCPOptions(sackBlocks: blocks))
            if n <= 3 { all.append(TCPOptions(timestamps: TCPTimestamps(value: 9, echoReply: 8), sackBlocks: blocks)) }
        }
        for options in all {
            let h = TCPHeader(sourcePort: 1000, destinationPort: 2000, sequenceNumber: SequenceNumber(3),
                              acknowledgmentNumber: SequenceNumber(4), flags: .ack, windowSize: 5, options: options)
            var first: [UInt8]?
            for poison: UInt8 in [0xaa, 0x55] {
                var buffer = poisonedBytes(64, poison)
                let n = try buffer.withUnsafeMutableBytes { raw in try h.emit(into: raw) }
                #expect(n == 20 + options.encodedLength)
                #expect(n <= 60)
                #expect(buffer[n...].allSatisfy { $0 == poison })
                let back = try Array(buffer[..<n]).withUnsafeBytes { raw in try TCPHeader.parse(raw) }
                #expect(back == h, "\(options)")
                #expect(back.options.sackBlocks.count == options.sackBlocks.count)
                if let first { #expect(first == Array(buffer[..<n]), "every byte written") }
                first = Array(buffer[..<n])
            }
            // The wire order we emit prints the same as the value.
            let text = try first!.withUnsafeBytes { raw in
                try TCPView(raw).optionList.map(\.description).joined(separator: ",")
            }
            #expect(text == options.description)
        }
    }

    @Test func optionsThatDoNotFitIn40BytesAreRefused() {
        let four = TCPSackBlocks((1 ... 4).map { block($0 * 10, $0 * 10 + 5) })
        let options = TCPOptions(timestamps: TCPTimestamps(value: 1, echoReply: 2), sackBlocks: four)
        #expect(options.encodedLength == 48)
        let h = TCPHeader(sourcePort: 1, destinationPort: 2, sequenceNumber: SequenceNumber(3), flags: .ack,
                          windowSize: 4, options: options)
        var buffer = poisonedBytes(100)
        let error = buffer.withUnsafeMutableBytes { raw -> WireError? in
            do throws(WireError) { _ = try h.emit(into: raw); return nil } catch { return error }
        }
        #expect(error == optionLength)
        #expect(buffer.allSatisfy { $0 == 0xaa }, "nothing written when refused")
        // Four blocks alone fit: 4 + 32 = 36 bytes.
        #expect(TCPOptions(sackBlocks: four).encodedLength == 36)
    }

    @Test func sackBlocksStoreCompareOnlyUsedSlots() {
        var a = TCPSackBlocks()
        #expect(a.isEmpty)
        a.append(block(1, 2))
        a.append(block(3, 4))
        var b = TCPSackBlocks([block(1, 2), block(3, 4), block(5, 6)])
        #expect(a != b)
        b.removeAll()
        b.append(block(1, 2))
        b.append(block(3, 4))
        #expect(a == b)
        #expect(a.description == "{1:2}{3:4}")
        a[1] = block(7, 8)
        #expect(Array(a) == [block(1, 2), block(7, 8)])
        var full = TCPSackBlocks((0 ..< 4).map { block($0, $0 + 1) })
        #expect(full.isFull)
        full.removeAll()
        #expect(full.isEmpty && !full.isFull)
    }
}
