/// Test vectors as RFCs and tools print them: hex pairs, with spaces, colons
/// or newlines between them, which are skipped. Test-only: the literals are
/// trusted, and an odd count of digits stops the test run.
public func hex(_ text: String) -> [UInt8] {
    let digits = text.unicodeScalars.compactMap { scalar -> UInt8? in
        switch scalar {
        case "0" ... "9": UInt8(scalar.value - 48)
        case "a" ... "f": UInt8(scalar.value - 87)
        case "A" ... "F": UInt8(scalar.value - 55)
        default: nil
        }
    }
    precondition(digits.count % 2 == 0, "odd number of hex digits in a test vector")
    return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
}
