// fuzz-sources: Sources/Wire Sources/Crypto Sources/HTTP Sources/Rules
// fuzz-corpus: bodyrewrite
// libFuzzer harness for [Body Rewrite]'s byte search: the input is a regex,
// "\n", then a body. When the regex is plain text (LiteralReplacement) and
// the body is UTF-8, the byte search must give what Regex gives, or give up
// (nil); and BodyRewriter finishes on any body, text or not.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBodyRewrite(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size <= 4096 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let newline = bytes.firstIndex(of: 0x0A) else { return 0 }
    let source = String(decoding: bytes[..<newline], as: UTF8.self)
    let body = Array(bytes[(newline + 1)...])
    guard let pair = try? BodyReplacement(source: source, replacement: "<$0>") else { return 0 }
    let template = URLTemplate(pair.replacement)
    if let literal = LiteralReplacement(source: source, template: template), let text = String(validating: body, as: UTF8.self),
       let fast = literal.replaceAll(in: body) {
        let byRegex = Array(HeaderRewriter.replaceAll(in: text, pattern: pair.pattern, with: template).utf8)
        precondition(fast == byRegex, "byte search and Regex disagree: \(source.debugDescription) in \(text.debugDescription)")
    }
    let rewriter = BodyRewriter(rewrites: [BodyRewrite(direction: .response, regex: try! CompiledRegex("^"), replacements: [pair], line: 1)])
    _ = rewriter.apply(rewriter.matching(.response, url: "http://a.test/"), to: body)
    return 0
}
