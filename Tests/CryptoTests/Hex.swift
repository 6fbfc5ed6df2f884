/// Decodes a hex string of test-vector text (whitespace allowed) into bytes.
func bytes(hex: String) -> [UInt8] {
    let digits = hex.unicodeScalars.filter { !$0.properties.isWhitespace }.map { scalar -> UInt8 in
        switch scalar.value {
        case 0x30 ... 0x39: UInt8(scalar.value - 0x30)
        case 0x61 ... 0x66: UInt8(scalar.value - 0x61 + 10)
        case 0x41 ... 0x46: UInt8(scalar.value - 0x41 + 10)
        default: fatalError("not a hex digit in test vector: \(scalar)")
        }
    }
    precondition(digits.count % 2 == 0, "odd-length hex in test vector")
    return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
}

/// Vectors as the RFCs print them: hex pairs, with spaces, colons or
/// newlines between them, which are skipped.
func hex(_ text: String) -> [UInt8] {
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
