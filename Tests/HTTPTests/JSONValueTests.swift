import Foundation
import HTTP
import Testing

@Suite struct JSONValueTests {
    @Test func parsesEveryKind() throws {
        let text = #" { "a": [1, -2.5, 3e2, 0, -0.0], "b": {"c": null, "d": true, "e": false}, "s": "x\"\\\/\b\f\n\r\tyé\u00e9\ud83d\ude00" } "#
        let value = try JSONValue.parse(text)
        #expect(value["a"] == .array([.number(1), .number(-2.5), .number(300), .number(0), .number(-0.0)]))
        #expect(value["a"]?[0]?.intValue == 1)
        #expect(value["a"]?[1]?.intValue == nil)
        #expect(value["b"]?["c"] == .null)
        #expect(value["b"]?["d"]?.boolValue == true)
        #expect(value["s"]?.stringValue == "x\"\\/\u{8}\u{c}\n\r\tyéé😀")
        #expect(value["missing"] == nil)
        #expect(try JSONValue.parse("[]") == .array([]))
        #expect(try JSONValue.parse("{}") == .object([]))
        #expect(try JSONValue.parse("\"\"") == .string(""))
    }

    @Test func roundTripsThroughTheWriter() throws {
        let text = #"{"name":"g \"1\"","members":[{"name":"a","latency-ms":12},{"name":"b","latency-ms":null}],"ok":true,"n":1.5}"#
        let value = try JSONValue.parse(text)
        #expect(value.description == text)
        #expect(try JSONValue.parse(value.description) == value)
        // Foundation reads what we write.
        #expect((try? JSONSerialization.jsonObject(with: Data(value.description.utf8))) != nil)
    }

    @Test func refusesWhatIsNotJSON() {
        for bad in ["", " ", "{", "[1,]", "{\"a\":1,}", "{a:1}", "{\"a\" 1}", "[1 2]", "01", "1.", ".5", "-", "1e", "+1",
                    "tru", "nul", "True", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"a\nb\"",
                    "1 2", "[1]]", "1e400", "-1e400", "{\"a\":1}x", "// c\n1", "NaN", "'a'"] {
            #expect(throws: JSONParseError.self, "\(bad.debugDescription)") { _ = try JSONValue.parse(bad) }
        }
    }

    @Test func everyTruncationOfADocumentIsRefused() throws {
        let text = Array(#"{"selected":"proxy-b","n":[1,2,{"x":null}]}"#.utf8)
        _ = try JSONValue.parse(text)
        for n in 0 ..< text.count {
            #expect(throws: JSONParseError.self, "\(n)") { _ = try JSONValue.parse(text.prefix(n)) }
        }
    }

    @Test func nestingIsBounded() throws {
        let deep = String(repeating: "[", count: JSONValue.maximumDepth) + String(repeating: "]", count: JSONValue.maximumDepth)
        _ = try JSONValue.parse(deep)
        let deeper = "[" + deep + "]"
        #expect(throws: JSONParseError.self) { _ = try JSONValue.parse(deeper) }
        // Far too deep is refused, not a stack overflow.
        #expect(throws: JSONParseError.self) { _ = try JSONValue.parse(String(repeating: "[", count: 100_000)) }
    }

    @Test func errorsSayWhere() {
        do {
            _ = try JSONValue.parse("{\"a\": tru}")
            Issue.record("parsed")
        } catch {
            #expect(error.offset == 6)
            #expect(error.description == "invalid JSON at byte 6: bad literal")
        }
    }
}
