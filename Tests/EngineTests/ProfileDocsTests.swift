import Testing
import Rules
import Sys
import TestSupport

/// docs/profile.md promises that each of its `ini` blocks is a complete profile
/// that loads; this keeps the promise as the dialect changes.
@Suite struct ProfileDocsTests {
    static let docsPath: String = {
        var path = "\(#filePath)"
        for _ in 0 ..< 3 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
        return path + "/docs/profile.md"
    }()

    static func iniBlocks() -> [(line: Int, text: String)] {
        guard let bytes = Files.read(docsPath) else { return [] }
        var blocks: [(Int, String)] = []
        var current: (Int, [Substring])?
        for (index, line) in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if current == nil, line == "```ini" {
                current = (index + 2, [])
            } else if let open = current, line == "```" {
                blocks.append((open.0, open.1.joined(separator: "\n") + "\n"))
                current = nil
            } else if current != nil {
                current!.1.append(line)
            }
        }
        return blocks
    }

    /// The files the examples' RULE-SET and DOMAIN-SET lines name, as a reader would give them.
    static let exampleSetFiles = ["/docs/lists/ads.txt": "# ads\n.ads.test\ntracker.test\n",
                                  "/docs/lists/corp.list": "DOMAIN-SUFFIX,corp.test\nIP-CIDR,10.9.0.0/16,no-resolve\n"]

    /// The country database the GEOIP example names.
    static let exampleDatabase = MaxMindTestDatabase.build([("192.0.2.0/24", "NL")])

    static func readSet(_ path: String) -> ProfileFile {
        if path == "/docs/GeoLite2-Country.mmdb" { return .bytes(exampleDatabase) }
        return exampleSetFiles[path].map(ProfileFile.text) ?? .unreadable("no such file")
    }

    @Test func everyExampleLoads() {
        let blocks = Self.iniBlocks()
        #expect(blocks.count >= 8, "read \(Self.docsPath)")
        for block in blocks {
            switch ProfileParser.parse(block.text, file: "docs/profile.md+\(block.line)", baseDirectory: "/docs", readFile: Self.readSet) {
            case .success:
                break
            case let .failure(failure):
                Issue.record("the example at docs/profile.md:\(block.line) does not load:\n\(failure)")
            }
        }
    }

    /// The 302 examples are the ones that warn, and only they.
    @Test func onlyThe302ExamplesWarn() throws {
        for block in Self.iniBlocks() {
            let profile = try ProfileParser.parse(block.text, file: "x", baseDirectory: "/docs", readFile: Self.readSet).get()
            #expect(profile.warnings.isEmpty == !block.text.contains(" 302\n"), "docs/profile.md:\(block.line)")
        }
    }
}
