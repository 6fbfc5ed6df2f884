// fuzz-sources: Sources/Wire Sources/Crypto Sources/HTTP
// fuzz-corpus: json
// libFuzzer harness for JSONValue, the reader behind the control API's request
// bodies: whatever the bytes, parsing either throws or yields a value that
// JSONWriter writes back as a document parsing to the same value.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let value = try? JSONValue.parse(bytes) else { return 0 }
    let text = value.description
    guard let again = try? JSONValue.parse(text) else { fatalError("written JSON does not parse: \(text)") }
    // NaN cannot occur (JSON has no NaN) and -0 prints as 0, equal under ==.
    if again != value { fatalError("round trip changed the value: \(text)") }
    _ = value["selected"]?.stringValue
    _ = value[0]?.intValue
    return 0
}
