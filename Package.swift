// swift-tools-version:6.0
// Sluice: a user-space packet tunnel for Linux. Layers import downward only;
// docs/architecture.md draws the graph and tools/check-layers enforces it.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    // Release builds skip the run-time exclusivity checks: they cost about 5% of
    // the loop's CPU per packet (swift_beginAccess on every class property
    // access). Debug builds, which every test runs, keep them and trap.
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

/// The one module built for more than baseline x86-64 (`-target-cpu` is per module in Swift).
#if arch(x86_64)
let wide: [SwiftSetting] = [.unsafeFlags(["-target-cpu", "haswell"])]
#else
let wide: [SwiftSetting] = []
#endif

let package = Package(
    name: "Sluice",
    products: [
        .executable(name: "sluice", targets: ["sluice"]),
        .executable(name: "sluice-bench", targets: ["sluice-bench"]),
    ],
    targets: [
        // The one C shim: everything Glibc hides (epoll, eventfd, timerfd, TUN ioctls,
        // setns/unshare, SO_MARK, sendmmsg/recvmmsg, rtnetlink) and libpcap's header.
        .target(
            name: "CShim",
            cSettings: [.define("_GNU_SOURCE")],
            linkerSettings: [.linkedLibrary("pcap")]
        ),

        // Pure layers: no syscalls, no clock, no Foundation.
        .target(name: "Wire", swiftSettings: strict),
        .target(name: "Stack", dependencies: ["Wire"], swiftSettings: strict),
        // Hashes, ciphers and signatures for QUIC sniffing and TLS.
        .target(name: "Crypto", dependencies: ["CryptoAVX2"], swiftSettings: strict),
        // ChaCha20 eight blocks and Poly1305 four blocks at a time, compiled for
        // AVX2 (Haswell, 2013, and later) while the rest stays baseline x86-64:
        // Crypto calls it only when the engine has found AVX2 in the CPU's flags.
        .target(name: "CryptoAVX2", swiftSettings: strict + wide),
        .target(name: "HTTP", dependencies: ["Wire", "Crypto"], swiftSettings: strict),
        // DER, PEM and X.509: reading chains, checking them, issuing certificates.
        .target(name: "X509", dependencies: ["Crypto"], swiftSettings: strict),
        // TLS 1.3 records, key schedule, messages and the client and server state machines.
        .target(name: "TLS", dependencies: ["Crypto"], swiftSettings: strict),
        .target(name: "Rules", dependencies: ["Wire", "Crypto", "HTTP"], swiftSettings: strict),
        .target(name: "Relay", dependencies: ["Wire", "Crypto", "HTTP"], swiftSettings: strict),

        // The only layer that makes syscalls.
        .target(name: "Sys", dependencies: ["CShim"], swiftSettings: strict),
        // pcap, HAR and flow logs.
        .target(name: "Capture", dependencies: ["CShim", "Sys", "Wire", "HTTP"], swiftSettings: strict),
        // The event loop that wires everything together.
        .target(
            name: "Engine",
            dependencies: ["Wire", "Stack", "Crypto", "X509", "TLS", "HTTP", "Rules", "Relay", "Sys", "Capture"],
            swiftSettings: strict
        ),
        .executableTarget(name: "sluice", dependencies: ["Engine", "Sys", "Wire"], swiftSettings: strict),
        .executableTarget(name: "sluice-bench", dependencies: ["Wire", "Stack", "Crypto", "X509", "TLS", "HTTP", "Rules", "Capture", "Sys"], swiftSettings: strict),

        // Shared by the tests: packet builders, namespace fixtures, pcap fixtures.
        .target(name: "TestSupport", dependencies: ["Wire", "Sys", "HTTP"], path: "Tests/TestSupport", swiftSettings: strict),

        .testTarget(name: "WireTests", dependencies: ["Wire", "TestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "StackTests", dependencies: ["Stack", "Wire", "TestSupport"]),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "CryptoAVX2", "Sys", "TestSupport"]),
        .testTarget(name: "X509Tests", dependencies: ["X509", "Crypto", "TestSupport"]),
        .testTarget(name: "TLSTests", dependencies: ["TLS", "Crypto", "X509", "TestSupport"]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "Crypto", "TestSupport"]),
        .testTarget(name: "RulesTests", dependencies: ["Rules", "Wire", "HTTP", "TestSupport"]),
        .testTarget(name: "RelayTests", dependencies: ["Relay"]),
        .testTarget(name: "SysTests", dependencies: ["Sys", "TestSupport"]),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "Wire", "Sys", "HTTP", "TestSupport"]),
        .testTarget(name: "EngineTests", dependencies: ["Engine", "Rules", "Sys", "Stack", "Wire", "HTTP", "TLS", "Crypto", "Capture", "TestSupport"]),
        .testTarget(name: "IntegrationTests", dependencies: ["Wire", "Sys", "HTTP", "Crypto", "X509", "TLS", "TestSupport"]),
    ]
)
