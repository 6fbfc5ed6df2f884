import Foundation
import Stack
import TLS
import TestSupport
import Testing
import Wire
@testable import Engine

/// `InterceptedApp` on a TCP connection of Sluice's own stack, its app a
/// TLS client on the other end of an in-memory TCP pair. After the
/// handshake the app's records are copied out of the receive ring (where
/// they may wrap) and opened in place; every byte must reach HTTP mode as
/// it went in, whatever the records' sizes, the segments and how fast HTTP
/// mode reads.
@Suite struct InterceptedAppTests {
    /// Two connections of the stack, segments passed between them by the test.
    final class Pair {
        var now = Instant.milliseconds(1_000)
        let app: TCPConnection
        let sluice: TCPConnection

        init(mss: Int) {
            var configuration = TCPConfiguration()
            configuration.maximumSegmentSize = mss
            configuration.idleTimeout = nil
            app = TCPConnection(connectingFrom: 40000, to: 443, initialSequence: SequenceNumber(7), configuration: configuration, now: now)
            var syn: [(TCPHeader, [UInt8])] = []
            app.output(now: now) { header, payload in syn.append((header, Array(payload))) }
            sluice = TCPConnection(acceptingSyn: syn[0].0, initialSequence: SequenceNumber(0xffff_ff00), configuration: configuration, now: now)
            shuttle()
        }

        /// Segments both ways until neither side has any to send; bounded.
        func shuttle() {
            for _ in 0 ..< 1000 {
                var moved = false
                for (from, to) in [(app, sluice), (sluice, app)] {
                    var segments: [(TCPHeader, [UInt8])] = []
                    from.output(now: now) { header, payload in segments.append((header, Array(payload))) }
                    for (header, payload) in segments {
                        payload.withUnsafeBytes { to.receive(header, payload: $0, now: now) }
                        moved = true
                    }
                }
                now = now.advanced(byNanoseconds: 1_000_000)
                if !moved { return }
            }
            Issue.record("segments still moving after 1,000 rounds")
        }
    }

    static func content(_ count: Int, seed: Int) -> [UInt8] {
        (0 ..< count).map { UInt8(truncatingIfNeeded: $0 &* 167 &+ seed &+ $0 >> 9) }
    }

    /// An app's TLS client and Sluice's `InterceptedApp`, connected.
    struct Connected {
        let pair: Pair
        var client: TLSClient
        let app: InterceptedApp
        /// The client's bytes the app's connection has not taken yet.
        var pending: [UInt8] = []

        /// Moves what is pending into the app's connection, the segments
        /// across, and lets `InterceptedApp` read; the client reads what
        /// came back. Returns the client's application data.
        mutating func step() throws -> [UInt8] {
            let taken = pending.withUnsafeBytes { pair.app.write($0) }
            pending.removeFirst(taken)
            pair.shuttle()
            _ = app.exchange(with: pair.sluice)
            pair.shuttle()
            let back = Array(pair.app.peekReadable())
            pair.app.consume(back.count)
            guard !back.isEmpty else { return [] }
            let output = try client.receive(back)
            pending += output.toPeer
            return output.applicationData
        }
    }

    func connected(mss: Int = 1460) throws -> Connected {
        let directory = FileManager.default.temporaryDirectory.path + "/sluice-intercepted-app-test-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let interception = Interception(ca: try InterceptionCA.load(directory: directory, create: true))
        interception.skipsVerification = true
        var client = interception.client(host: "web.test")
        let pending = client.start()
        var connection = Connected(pair: Pair(mss: mss), client: client, app: InterceptedApp(server: interception.server(address: "10.0.0.1")),
                                   pending: pending)
        // Bounded: a handshake is three flights.
        for _ in 0 ..< 20 where !(connection.client.state == .connected && connection.app.isConnected) {
            _ = try connection.step()
        }
        try #require(connection.client.state == .connected && connection.app.isConnected)
        return connection
    }

    /// HTTP mode's side: reads up to `room` bytes of what the app sent.
    func read(_ app: InterceptedApp, room: Int) -> [UInt8] {
        let bytes = Array(app.readable.prefix(room))
        app.consume(bytes.count)
        return bytes
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func everyByteReachesHTTPModeWhateverTheRecordsAndTheReader(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var c = try connected(mss: [536, 1460, 9000][Int(seed % 3)])
        var content: [UInt8] = []
        for index in 0 ..< 40 {
            let count = [1, 7, 700, 4096, 16383, 16384, 30000][Int.random(in: 0 ..< 7, using: &random)]
            let piece = Self.content(count, seed: index + Int(seed))
            content += piece
            c.pending += c.client.send(piece)
        }
        c.pending += c.client.close()
        var received: [UInt8] = []
        // Bounded: each pass moves bytes or reads; HTTP mode sometimes reads nothing for a while.
        for _ in 0 ..< 5000 where !(c.app.isReadClosed(c.pair.sluice) && c.pending.isEmpty) {
            _ = try c.step()
            if Int.random(in: 0 ..< 4, using: &random) > 0 {
                let room = [1, 100, 4096, 16384, 70000][Int.random(in: 0 ..< 5, using: &random)]
                received += read(c.app, room: room)
            }
            #expect(c.app.failure == nil)
        }
        received += read(c.app, room: .max)
        #expect(received.count == content.count)
        #expect(firstDifference(received, content) == nil)
        #expect(c.app.peerClosed)
        #expect(c.app.isReadClosed(c.pair.sluice))
    }

    /// HTTP mode reads nothing: the app's records are opened only as far as
    /// the read-ahead allows, and the rest, read from the connection and
    /// not yet opened, are reported waiting (no segment will come to say
    /// so), then all come as HTTP mode reads.
    @Test func recordsBeyondTheReadAheadWaitAndAreReportedWaiting() throws {
        var c = try connected()
        // 50,000 bytes under the read-ahead, then 60,000 more, which are
        // taken from the connection at once and opened one record past it.
        let content = Self.content(110_000, seed: 3)
        c.pending += c.client.send(Array(content[..<50000]))
        for _ in 0 ..< 50 where !c.pending.isEmpty || c.pair.sluice.readableCount > 0 { _ = try c.step() }
        #expect(c.app.plaintext.count == 50000)
        c.pending += c.client.send(Array(content[50000...]))
        for _ in 0 ..< 50 where !c.pending.isEmpty || c.pair.sluice.readableCount > 0 { _ = try c.step() }
        #expect(c.app.plaintext.count >= InterceptedApp.readAhead)
        #expect(c.app.plaintext.count < InterceptedApp.readAhead + 16 * 1024)
        // All of the rest was taken from the connection: it waits unopened.
        #expect(c.pair.sluice.readableCount == 0)
        #expect(c.app.hasRecordsWaiting(in: c.pair.sluice))
        #expect(!c.app.isReadClosed(c.pair.sluice))
        var received: [UInt8] = []
        // What pumpHTTP does: read, and let the app's side decrypt more only when something waits.
        for _ in 0 ..< 100 where received.count < content.count {
            received += read(c.app, room: .max)
            guard c.app.hasRecordsWaiting(in: c.pair.sluice) else { break }
            _ = c.app.exchange(with: c.pair.sluice)
        }
        #expect(received.count == content.count)
        #expect(firstDifference(received, content) == nil)
        #expect(!c.app.hasRecordsWaiting(in: c.pair.sluice))
    }

    /// The app's FIN after half a record: what came before it is read, and
    /// the app's side is then closed for reading (the half record waits
    /// for nothing). With whole records still unopened it is not.
    @Test func aFINAfterHalfARecordClosesTheAppsSide() throws {
        var c = try connected()
        let content = Self.content(20000, seed: 7)
        let records = c.client.send(content)
        let half = c.client.send(Self.content(1000, seed: 8))
        c.pending += records + half.prefix(500)
        for _ in 0 ..< 20 where !c.pending.isEmpty || c.pair.sluice.readableCount > 0 { _ = try c.step() }
        c.pair.app.shutdownWrite()
        _ = try c.step()
        #expect(c.pair.sluice.isReadClosed)
        #expect(!c.app.isReadClosed(c.pair.sluice), "closed with plaintext unread")
        #expect(read(c.app, room: .max) == content)
        #expect(c.app.isReadClosed(c.pair.sluice))
        #expect(c.app.failure == nil)
    }

    /// A damaged record fails the connection: an alert for the app, the
    /// content before it delivered, nothing after.
    @Test func aDamagedRecordFailsWithAnAlert() throws {
        var c = try connected()
        let good = Self.content(5000, seed: 4)
        c.pending += c.client.send(good)
        var bad = c.client.send(Self.content(3000, seed: 5))
        bad[bad.count / 2] ^= 0x40
        c.pending += bad
        c.pending += c.client.send(Self.content(100, seed: 6))
        var received: [UInt8] = []
        var alerted = false
        for _ in 0 ..< 20 {
            do { _ = try c.step() } catch { alerted = true }
            received += read(c.app, room: .max)
        }
        #expect(received == good)
        #expect(c.app.failure != nil)
        #expect(alerted, "the app's client never heard the alert")
    }
}
