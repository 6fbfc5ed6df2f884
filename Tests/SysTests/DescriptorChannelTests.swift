import Foundation
import Glibc
import Sys
import Testing

/// The channel `sluice exec` without root gets its TUN through: bytes and
/// descriptors arrive together, whole, and the descriptors work on this side.
@Suite struct DescriptorChannelTests {
    @Test func descriptorsArriveWithTheirMessageAndStillWork() throws {
        let ends = try DescriptorChannel.pair()
        let ours = DescriptorChannel(adopting: ends.ours), theirs = DescriptorChannel(adopting: ends.theirs)
        let pipe = try FileDescriptor.Pipe()
        let other = try FileDescriptor.Pipe()
        try theirs.send(Array("T".utf8), descriptors: [pipe.writeEnd.rawValue, other.readEnd.rawValue])
        let message = try ours.receive(timeoutMilliseconds: 1000)
        #expect(message.bytes == Array("T".utf8))
        #expect(message.descriptors.count == 2)
        guard message.descriptors.count == 2 else { return }
        let received = FileDescriptor(rawValue: message.descriptors[0])
        _ = FileDescriptor(rawValue: message.descriptors[1])
        // A new number for the same pipe: what is written through it comes out of the read end.
        #expect(received.rawValue != pipe.writeEnd.rawValue)
        #expect(fcntl(received.rawValue, F_GETFD) & FD_CLOEXEC != 0, "close-on-exec: a command Sluice starts must not inherit it")
        let byte: [UInt8] = [42]
        #expect(byte.withUnsafeBytes { Glibc.write(received.rawValue, $0.baseAddress, 1) } == 1)
        var back: [UInt8] = [0]
        #expect(back.withUnsafeMutableBytes { Glibc.read(pipe.readEnd.rawValue, $0.baseAddress, 1) } == 1)
        #expect(back == [42])
    }

    @Test func messagesStayWholeAndInOrder() throws {
        let ends = try DescriptorChannel.pair()
        let ours = DescriptorChannel(adopting: ends.ours), theirs = DescriptorChannel(adopting: ends.theirs)
        let long = [UInt8](repeating: 7, count: 3000)
        try theirs.send(Array("E first".utf8))
        try theirs.send(long)
        #expect(try ours.receive(timeoutMilliseconds: 1000).bytes == Array("E first".utf8))
        let second = try ours.receive(timeoutMilliseconds: 1000)
        #expect(second.bytes == long && second.descriptors.isEmpty)
    }

    @Test func aClosedPeerReadsAsAnEmptyMessageAndSilenceTimesOut() throws {
        let ends = try DescriptorChannel.pair()
        let ours = DescriptorChannel(adopting: ends.ours)
        #expect(throws: Errno.timedOut) { try ours.receive(timeoutMilliseconds: 20) }
        _ = FileDescriptor(rawValue: ends.theirs)
        let message = try ours.receive(timeoutMilliseconds: 1000)
        #expect(message.bytes.isEmpty && message.descriptors.isEmpty)
    }
}

/// What `sluice exec` keeps its files in when not root: a folder only this user may write.
@Suite struct PrivateDirectoryTests {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-private-\(getpid())-\(UUID().uuidString)").path

    @Test func aMissingFolderIsMadeAndAPlantedOneIsRefused() throws {
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let made = base + "/mine"
        #expect(Files.makePrivateDirectory(made))
        #expect(Files.makePrivateDirectory(made), "again: it is already right")
        let attributes = try FileManager.default.attributesOfItem(atPath: made)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        let open = base + "/open"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o777])
        #expect(!Files.makePrivateDirectory(open), "others may write it")
        let link = base + "/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: made)
        #expect(!Files.makePrivateDirectory(link), "a symbolic link, even to a good folder")
        let file = base + "/file"
        _ = FileManager.default.createFile(atPath: file, contents: nil)
        #expect(!Files.makePrivateDirectory(file))
        if getuid() == 0 {
            let theirs = base + "/theirs"
            try FileManager.default.createDirectory(atPath: theirs, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            #expect(chown(theirs, 65534, 65534) == 0)
            #expect(!Files.makePrivateDirectory(theirs), "someone else's")
        }
    }
}
