import TestSupport

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

