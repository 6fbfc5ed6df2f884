/// Compares a secret we hold with bytes a peer sent, in time that depends only
/// on the secret's length, so a listener's answer timing leaks nothing about
/// how much of a guess was right.
package func constantTimeEquals(_ secret: some Collection<UInt8>, _ guess: UnsafeRawBufferPointer) -> Bool {
    var difference: UInt8 = secret.count == guess.count ? 0 : 1
    var i = 0
    for byte in secret {
        let other = guess.isEmpty ? 0 : guess[i % guess.count]
        difference |= byte ^ other
        i += 1
    }
    return difference == 0
}

/// Two byte arrays of which one or both are secret (a MAC, a Finished's
/// verify_data): equal lengths and equal bytes, with no early exit.
package func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for i in a.indices { difference |= a[i] ^ b[i] }
    return difference == 0
}
