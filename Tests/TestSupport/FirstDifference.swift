/// Where two byte strings first differ (nil when they are equal), for a
/// message that fits on a screen: `#expect(a == b)` over megabytes prints
/// them whole.
public func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int? {
    let n = min(a.count, b.count)
    for i in 0 ..< n where a[i] != b[i] { return i }
    return a.count == b.count ? nil : n
}
