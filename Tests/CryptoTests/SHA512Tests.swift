import TestSupport
import Testing
@testable import Crypto

/// FIPS 180-4 example messages (the NIST "Examples with intermediate values"
/// for SHA-512 and SHA-384), then lengths 0...300 checked against digests made
/// with `openssl dgst -sha512 / -sha384` while authoring.
struct SHA512Tests {
    private static let twoBlockMessage = Array("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu".utf8)

    /// The message of length `count` used for the openssl comparisons: byte i is i mod 251.
    private static func patternMessage(count: Int) -> [UInt8] { (0 ..< count).map { UInt8($0 % 251) } }

    @Test func sha512FIPSExamples() {
        #expect(SHA512.hash(Array("abc".utf8)) == hex("ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"))
        #expect(Self.twoBlockMessage.count * 8 == 896)
        #expect(SHA512.hash(Self.twoBlockMessage) == hex("8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909"))
        #expect(SHA512.hash([]) == hex("cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"))
    }

    @Test func sha384FIPSExamples() {
        #expect(SHA384.hash(Array("abc".utf8)) == hex("cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"))
        #expect(SHA384.hash(Self.twoBlockMessage) == hex("09330c33f71147e83d192fc782cd1b4753111b173b3b05d22fa08086e3b0f712fcc7c71a557e2db966c3e9fa91746039"))
        #expect(SHA384.hash([]) == hex("38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da274edebfe76f65fbd51ad2f14898b95b"))
    }

    @Test func oneMillionA() {
        let message = [UInt8](repeating: 0x61, count: 1_000_000)
        #expect(SHA512.hash(message) == hex("e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973ebde0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b"))
        #expect(SHA384.hash(message) == hex("9d0e1809716474cb086e834e310a4a1ced149e9c00f248527972cec5704c2a5b07b8b3dc38ecc4ebae97ddd87f3d8985"))
    }

    @Test func digestSizes() {
        #expect(SHA512.hash(Array("abc".utf8)).count == SHA512.digestSize)
        #expect(SHA384.hash(Array("abc".utf8)).count == SHA384.digestSize)
        #expect(SHA512.blockSize == 128 && SHA384.blockSize == 128)
    }

    /// Lengths around the padding boundaries: 111 is the longest message whose
    /// 0x80 and 128-bit length fit in one block, 112 the shortest that needs a
    /// second block, 128 exactly one block of data.
    @Test(arguments: [
        (0, "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e", "38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da274edebfe76f65fbd51ad2f14898b95b"),
        (1, "b8244d028981d693af7b456af8efa4cad63d282e19ff14942c246e50d9351d22704a802a71c3580b6370de4ceb293c324a8423342557d4e5c38438f0e36910ee", "bec021b4f368e3069134e012c2b4307083d3a9bdd206e24e5f0d86e13d6636655933ec2b413465966817a9c208a11717"),
        (55, "6856647f269c2ee3d8128f0b25427659d880641ef343300dd3cd4679168f58d6527fda70b4ebc854e2065e172b7d58c1536992c0810599259ba84a2b40c65414", "dcedb6b590edb4efa849c801e6b6490657a5c1e64f69269f5f63c9267f6223de24cea7aaa6b267d9bcecc15147b6c875"),
        (56, "8b12b2f6fe400a51d29656e2b8c42a1bbfe6fcf3e425da430db05d1a2dda14790dee20fa8b22d8762afffe4988a5c98a4430d22a17e41e23d90fa61ab75671a9", "7b9132d597b8873ad55bbc30f18ed3f2c9f340e7de69fb5774056c71a06d9bc2b14137e9e1c68b6b645fed28b188249d"),
        (63, "9dc9c5598e55dc42955695320839788e353f1d7f6ba74df74c80a8a52f463c0697f57f68835d1418f4ce9b6530cd79bd0f4c6f7e13c93feb1218c0b65c2c0561", "dd66b519f51a925814407a449c60b34c553d7652d41783ee903a810a4c9f833b8181c91c7f12283eacd6a5f8a2639ddf"),
        (64, "ee4320ebaf3fdb4f2c832b137200c08e235e0fa7bbd0eb1740c7063ba8a0d151da77e003398e1714a955d475b05e3e950b639503b452ec185de4229bc4873949", "9f2c9eb7116b3d7a4ba84a74a4d4eff8a5efcf54b6d7b662693c38577914c73a214766f0a175339bb0895a863824fc0a"),
        (110, "51f2ba331c24541efec042cc66398d388348c4fedc3f77a4ddfda39752ae2880c68e0465c15b07abfd93e16ba635ae7ca7d7e144018ade57607de8643992f50b", "8f1e4237fbb668d2705fa6964ff50014f54ab6346a7decc8dbaa282b51803de20f9090e7af2e6b40fd8a138afe25e1bc"),
        (111, "a1a111449b198d9b1f538bad7f3fc1022b3a5b1a5e90a0bc860de8512746cbc31599e6c834de3a3235327af0b51ff57bf7acf1974a73014d9c3953812edc7c8d", "f5f9fe110d809d34029de262a01b208356caec6e054c7f926b2591f6c9780579d4b59f5578c6f531a84f158a33660cef"),
        (112, "c5fbd731d19d2ae1180f001be72c2c1aaba1d7b094b3748880e24593b8e117a750e11c1bd867cc2f96dace8c8b74abd2d5c4f236be444e77d30d1916174070b9", "33ba080ec0ccb378e4e95fed3b26c23aa1a280476e007519ee47f60cd9c5c8a65d627259a9aa2fd33ca06d3c14ee5548"),
        (113, "61b2e77db697dfe5571fff3ed06bd60c41e1e7b7c08a80de01cb16526d9a9a52d690dfbe792278a60f6e2b4c57a97c729773f26e258d2393890c985d645f6715", "f14fc73c4192759b70993dc35fbee193a60a98dbd1f8b2421afa253dec63015a0d6b75fb50f9f9a5f7fb8e7241540699"),
        (127, "eab89674feaa34e27aebeeff3c0a4d70070bb872d5e9f186cf1dbbdee517b6e35724d629ff025a5b07185e911ada7e3c8acf830aa0e4f71777bd2d44f504f7f0", "d5fcfe2fcf6b3ef375ede37c8123d9b78065fecc1d55197e2f7721e6e9a93d0ba4d7fd15f9b96dea2744df24141ba2ef"),
        (128, "1dffd5e3adb71d45d2245939665521ae001a317a03720a45732ba1900ca3b8351fc5c9b4ca513eba6f80bc7b1d1fdad4abd13491cb824d61b08d8c0e1561b3f7", "ca2385773319124534111a36d0581fc3f00815e907034b90cff9c3a861e126a741d5dfcff65a417b6d7296863ac0ec17"),
        (129, "1d9da57fbbdab09afb3506ab2d223d06109d65c1c8ad197f50138f714bc4c3f2fe5787922639c680acad1c651f955990425954ce2cba0c5cc83f2667d878eb0f", "ef49ae5b9ad51433d00323528d81ea8d2e4d2b507dbd9f1cb84f952b66249a788b1c89fcdb77a0db9f1feb901d47fc73"),
        (239, "cb4c7fd522756d5781ad3a4f590a1d862906b960e7720136cb3fb36b563caa1ea5689134291fa79c80ccc2b4092b41df32ebdcb36dbe79db483440228c1622a8", "2556cf077a788c49bb6d600f4a3cee635c4443832d169f761537afee2980742b9f34afbc87f598dd0aedc4a826ed6a73"),
        (240, "6c48466c9f6c07e4ab762c696b7eeb35cfe236fca73683e5fab873ac3489b4d2eb3d7afcce7e8165dbbf37aded3b5b0c889c0b7e0f1790a8330d8677429d91a5", "d64769ad58f5a338669b935f3431e5bef31667d0a2437bff78f1e5275075f434fff675f9833ea04ac4e5c2e2c2c99b8c"),
        (255, "e9746a5516961da1fdc8e6c59350cd147b7d80c120cc7ed621399faeb2462c28f34217a13009a8e6a721f538356db9a9b64d9a5412e0fd07d24cac1315d95548", "0ba9892ce126be582d86f75cd5e682092525cc6a232c5d8b83ce4b8b0eefd644a14cb58c7989108d90a16a99325e99b5"),
        (256, "7ff1cd1e9773a4b7ba1f40e642db0d879bd5f6cc151a7d3401a0bc7778b8270c108b530fb195f2383f4cec8cf05778e6af4db56811673371674cec1524488f83", "2786ae11483c719dcb61b32652daf932d7c304f0d5d1e3904f6be6b44826d94de4fc922065558ad6aa10ae8b9eba005d"),
        (300, "f758e49e6fca32320310aa1b0b2e3abfeab7fc8414ba069022e8b39b7e53628be4777edbab93a6780a8318eed48c4665ff55d68dff2e6c84b6270b4eff6df873", "81f37398a358948c72eae8400060522a95f3b6a1bb8607270f64087346d7644f1ba945c6bd2976f1cb5d8eb7a5469b10"),
    ])
    func lengthsAroundPaddingBoundaries(count: Int, sha512: String, sha384: String) {
        let message = Self.patternMessage(count: count)
        #expect(SHA512.hash(message) == hex(sha512))
        #expect(SHA384.hash(message) == hex(sha384))
    }

    /// Every length 0...300 at once: openssl's digest of the concatenation of
    /// the 301 per-length digests. Any one wrong digest changes it.
    @Test func everyLengthUpTo300() {
        var allSHA512: [UInt8] = []
        var allSHA384: [UInt8] = []
        for count in 0 ... 300 {
            let message = Self.patternMessage(count: count)
            allSHA512 += SHA512.hash(message)
            allSHA384 += SHA384.hash(message)
        }
        #expect(SHA512.hash(allSHA512) == hex("da20b3b598f77f25e2e2d1941e345bfe16543f32378fbc8447fbb64f038964cea0808c9d450e5e83ac095f5656c102b2ff15a8e0501c7553a7afe1e0256b5e09"))
        #expect(SHA384.hash(allSHA384) == hex("80e3889f16595105b3522047c1e668b4e51531d98a660101516923ebdb1cf359b8a3bd514465820fa194d12fa7cc37f6"))
    }
}
