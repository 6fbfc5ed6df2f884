// fuzz-sources: Sources/Wire Sources/Crypto Sources/HTTP Sources/Rules
// fuzz-corpus: mmdb
// libFuzzer harness for the MaxMind DB reader (GEOIP's database): whatever
// the bytes, loading ends with a database or an error, and lookups of any
// address answer a country (or an AS number) or nothing, in bounded time, without trapping.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMaxMindDatabase(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let database = try? MaxMindDatabase(bytes) else { return 0 }
    _ = database.description
    var addresses: [IPAddress] = [
        .v4(IPv4Address(192, 0, 2, 1)), .v4(IPv4Address(198, 51, 100, 200)), .v4(IPv4Address(100, 64, 1, 1)),
        .v4(IPv4Address(0, 0, 0, 0)), .v4(IPv4Address(255, 255, 255, 255)),
        .v6(IPv6Address(high: 0x2001_0db8_0000_0000, low: 1)), .v6(IPv6Address(high: 0, low: 0xffff_c000_0201)),
        .v6(IPv6Address(high: ~0, low: ~0)),
    ]
    // Addresses taken from the input too, so the walk reaches records the fixed ones miss.
    var i = 0
    while i + 4 <= min(bytes.count, 64) {
        addresses.append(.v4(IPv4Address(UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3]))))
        i += 4
    }
    for address in addresses {
        if let code = database.country(of: address) { precondition(code.utf8.count < 1 << 24) }
        _ = database.autonomousSystemNumber(of: address)
    }
    return 0
}
