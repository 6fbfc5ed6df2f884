/// HMAC (RFC 2104) over any of the hashes here.
package enum HMAC<Hash: HashFunction> {
    package static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        // §2: a key longer than a block is hashed first; then zero-padded to a block.
        var block = key.count > Hash.blockSize ? Hash.hash(key) : key
        block += [UInt8](repeating: 0, count: Hash.blockSize - block.count)
        let inner = Hash.hash(block.map { $0 ^ 0x36 } + message)
        return Hash.hash(block.map { $0 ^ 0x5c } + inner)
    }
}
