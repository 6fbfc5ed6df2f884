import Testing
import HTTP

@Suite struct JSONWriterTests {
    @Test func compactObjectWithEveryValueKind() {
        var json = JSONWriter()
        json.beginObject()
        json.field("s", "x")
        json.field("i", -42)
        json.field("d", 1.5)
        json.field("whole", 12.0)
        json.field("t", true)
        json.field("f", false)
        json.nullField("n")
        json.field("none", nil as String?)
        json.field("some", 7 as Int?)
        json.key("a")
        json.beginArray()
        json.int(1)
        json.string("two")
        json.beginObject()
        json.endObject()
        json.beginArray()
        json.endArray()
        json.null()
        json.endArray()
        json.endObject()
        #expect(json.text == #"{"s":"x","i":-42,"d":1.5,"whole":12,"t":true,"f":false,"n":null,"none":null,"some":7,"a":[1,"two",{},[],null]}"#)
        #expect(json.depth == 0)
    }

    @Test func topLevelScalarsAndArrays() {
        var json = JSONWriter()
        json.string("alone")
        #expect(json.text == #""alone""#)
        var array = JSONWriter()
        array.beginArray()
        array.bool(true)
        array.bool(false)
        array.endArray()
        #expect(array.text == "[true,false]")
    }

    @Test func escapesQuoteBackslashAndControls() {
        var json = JSONWriter()
        json.string("a\"b\\c\nd\re\tf\u{0}\u{1}\u{8}\u{C}\u{1F} \u{7F}")
        #expect(json.text == "\"a\\\"b\\\\c\\nd\\re\\tf\\u0000\\u0001\\u0008\\u000c\\u001f \u{7F}\"")
    }

    @Test func keysAreEscapedToo() {
        var json = JSONWriter()
        json.beginObject()
        json.field("k\"\n", 1)
        json.endObject()
        #expect(json.text == #"{"k\"\n":1}"#)
    }

    @Test func nonASCIIPassesThroughAsUTF8() {
        var json = JSONWriter()
        json.string("é✓😀\u{2028}\u{2029}")
        #expect(json.text == "\"é✓😀\u{2028}\u{2029}\"")
        #expect(json.bytes.count == 2 + "é✓😀\u{2028}\u{2029}".utf8.count)
    }

    @Test func doublesStayValidJSON() {
        var json = JSONWriter()
        json.beginArray()
        json.double(.nan)
        json.double(.infinity)
        json.double(-.infinity)
        json.double(0.1)
        json.double(-3)
        json.double(1e-5)
        json.double(1.5e300)
        json.endArray()
        #expect(json.text == "[null,null,null,0.1,-3,1e-05,1.5e+300]")
    }

    @Test func prettyIndentsTwoSpaces() {
        var json = JSONWriter(pretty: true)
        json.beginObject()
        json.field("a", 1)
        json.key("b")
        json.beginArray()
        json.string("x")
        json.beginObject()
        json.endObject()
        json.endArray()
        json.key("c")
        json.beginArray()
        json.endArray()
        json.endObject()
        #expect(json.text == """
            {
              "a": 1,
              "b": [
                "x",
                {}
              ],
              "c": []
            }
            """)
    }
}
