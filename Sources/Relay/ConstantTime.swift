/// Compares a secret we hold with bytes a peer sent, in time that depends only
/// on the secret's length, so a listener's answer timing leaks nothing about
/// how much of a guess was right.
func constantTimeEquals(_ secret: some Collection<UInt8>, _ guess: UnsafeRawBufferPointer) -> Bool {
    var difference: UInt8 = secret.count == guess.count ? 0 : 1
    var i = 0
    for byte in secret {
        let other = guess.isEmpty ? 0 : guess[i % guess.count]
        difference |= byte ^ other
        i += 1
    }
    return difference == 0
}
