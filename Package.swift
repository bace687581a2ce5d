// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "SCMesh",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "scmesh", targets: ["scmesh"]),
        .library(name: "MeshCore", targets: ["MeshCore"]),
        .library(name: "MeshCrypto", targets: ["MeshCrypto"]),
        .library(name: "MeshTesting", targets: ["MeshTesting"]),
        .library(name: "TransportLoopback", targets: ["TransportLoopback"]),
        .library(name: "TransportTCP", targets: ["TransportTCP"]),
        .library(name: "TransportMDNS", targets: ["TransportMDNS"]),
        .library(name: "TransportBLE", targets: ["TransportBLE"]),
        .library(name: "MeshNode", targets: ["MeshNode"]),
        .library(name: "MeshStore", targets: ["MeshStore"]),
        .library(name: "MeshNodeHTTP", targets: ["MeshNodeHTTP"]),
        // scmesh:new-transport-products
    ],
    traits: [
        .trait(name: "MDNS", description: "Build the Avahi/mDNS transport (needs libavahi-client-dev)."),
        .trait(name: "BLE", description: "Build the BlueZ BLE transport (needs libbluetooth-dev)."),
        .default(enabledTraits: ["MDNS", "BLE"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
    ],
    targets: [
        // MARK: Core (no C, no NIO)
        .target(
            name: "MeshCore",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "MeshTesting",
            dependencies: [
                "MeshCore",
                "TransportLoopback",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),

        // MARK: Store (SQLite through GRDB; MeshCore only sees its protocols)
        .target(
            name: "MeshStore",
            dependencies: [
                "MeshCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // MARK: Crypto
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        .target(name: "MeshCrypto", dependencies: ["MeshCore", "CSodium"]),

        // MARK: Transports
        .target(
            name: "TransportLoopback",
            dependencies: [
                "MeshCore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "TransportTCP",
            dependencies: [
                "MeshCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // No pkgConfig: avahi-client's pkg-config adds -D_REENTRANT, which SwiftPM
        // refuses with a warning; the headers are in /usr/include and the module map
        // names the libraries.
        .systemLibrary(
            name: "CAvahi",
            providers: [.apt(["libavahi-client-dev"])]
        ),
        .target(
            name: "TransportMDNS",
            dependencies: [
                "MeshCore",
                "TransportTCP",
                .target(name: "CAvahi", condition: .when(traits: ["MDNS"])),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .systemLibrary(
            name: "CBlueZ",
            pkgConfig: "bluez",
            providers: [.apt(["libbluetooth-dev"])]
        ),
        .target(
            name: "TransportBLE",
            dependencies: [
                "MeshCore",
                .target(name: "CBlueZ", condition: .when(traits: ["BLE"])),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Node
        .target(
            name: "MeshNode",
            dependencies: [
                "MeshCore",
                "MeshCrypto",
                "MeshStore",
                "TransportLoopback",
                "TransportTCP",
                "TransportMDNS",
                "TransportBLE",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ],
            // Embedded in the code (PackageResources), not a bundle beside the binary: an
            // installed `scmesh` is one file (README: Running as a service).
            resources: [.embedInCode("Resources/node.yaml")]
        ),
        // MARK: HTTP API, event stream, dashboard and metrics (Hummingbird; the core never sees it)
        .target(
            name: "MeshNodeHTTP",
            dependencies: [
                "MeshCore",
                "MeshNode",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            resources: [.embedInCode("Resources/dashboard.html"), .embedInCode("Resources/openapi.json")]
        ),
        .executableTarget(
            name: "scmesh",
            dependencies: [
                "MeshNode",
                "MeshNodeHTTP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The mesh simulator behind `MeshBench sim` and Tests/MeshSimulatorTests: a
        // benchmark tool, in no library product.
        .target(
            name: "MeshSimulator",
            dependencies: [
                "MeshCore",
                "TransportLoopback",
                "MeshTesting",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/MeshSimulator"
        ),
        .executableTarget(
            name: "MeshBench",
            dependencies: [
                "MeshCore",
                "MeshSimulator",
                "MeshTesting",
                "TransportLoopback",
                "MeshCrypto",
                "MeshStore",
                "CSodium",
                "TransportTCP",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Benchmarks/MeshBench"
        ),
        // The guest program of scripts/ble-vm/run.sh: BLETransport on a real kernel
        // Bluetooth stack in a qemu VM (a test tool, not a product for users). Part of this
        // package so that scripts/test.sh's one `swift build` builds it too.
        .executableTarget(
            name: "ble-vm-test",
            dependencies: [
                "TransportBLE",
                "MeshCore",
                "MeshCrypto",
                "MeshTesting",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "scripts/ble-vm/ble-vm-test"
        ),

        // MARK: Tests
        // What the test targets share (temporary directories, free ports, bounded
        // polls, a raw socket client); in no product.
        .target(name: "TestSupport", path: "Tests/Support"),
        .testTarget(name: "MeshCoreTests", dependencies: ["MeshCore", "MeshTesting", "TransportLoopback", .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "MeshCryptoTests",
            dependencies: ["TestSupport", "MeshCrypto", "MeshCore", "MeshTesting", "TransportLoopback", .product(name: "Logging", package: "swift-log")],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(name: "TransportTCPTests", dependencies: ["TestSupport", "TransportTCP", "MeshCore", "MeshTesting", "MeshCrypto", "TransportLoopback", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "TransportMDNSTests", dependencies: ["TestSupport", "TransportMDNS", "TransportTCP", "MeshCore", "MeshTesting", "TransportLoopback"]),
        .testTarget(name: "TransportBLETests", dependencies: ["TransportBLE", "MeshCore", "MeshTesting"]),
        .testTarget(name: "MeshNodeTests", dependencies: ["TestSupport", "MeshNode", "MeshCore", "MeshCrypto", "MeshStore", "MeshTesting", "TransportLoopback"]),
        .testTarget(name: "MeshNodeHTTPTests", dependencies: ["TestSupport", "MeshNodeHTTP", "MeshNode", "MeshCore", "MeshTesting", "TransportLoopback", "TransportMDNS", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "TransportLoopbackTests", dependencies: ["TransportLoopback", "MeshCore", "MeshTesting"]),
        .testTarget(name: "MeshSimulatorTests", dependencies: ["MeshSimulator", "MeshCore"]),
        .testTarget(name: "MeshStoreTests", dependencies: ["TestSupport", "MeshStore", "MeshCore", "MeshTesting", "TransportLoopback", .product(name: "Logging", package: "swift-log"), .product(name: "GRDB", package: "GRDB.swift")]),

        // MARK: Plugins
        .plugin(
            name: "NewTransport",
            capability: .command(
                intent: .custom(
                    verb: "new-transport",
                    description: "Scaffold a transport module, its conformance test, its Package.swift entries and an example config."),
                permissions: [
                    .writeToPackageDirectory(
                        reason: "new-transport adds Sources/Transport<Name>/, Tests/Transport<Name>Tests/, Config/examples/<name>.yaml and their entries in Package.swift.")
                ]
            )
        ),
        // scmesh:new-transport-targets
    ]
)

// Coverage-guided fuzz targets (libFuzzer), declared only when SCMESH_FUZZ is set, so
// the normal build and `swift test` never see them. `scripts/fuzz.sh` sets it and
// builds them in their own scratch path (.build-fuzz) with the fuzzer instrumentation;
// being in this package, they reach package-level API such as `Frame.decode`.
if Context.environment["SCMESH_FUZZ"] != nil {
    package.targets.append(.target(name: "FuzzSupport", path: "Fuzz/Support"))
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("FuzzFrame", ["MeshCore"]),
        ("FuzzReassembler", ["MeshCore"]),
        ("FuzzHandshake", ["MeshCore", "MeshCrypto"]),
        ("FuzzIdentityProof", ["MeshCore", "MeshCrypto"]),
        ("FuzzEnvelope", ["MeshCore", "MeshCrypto"]),
        ("FuzzControlRequest", ["MeshCore", "MeshNode"]),
        ("FuzzConfig", ["MeshCore", "MeshNode"]),
        ("FuzzATT", ["TransportBLE"]),
    ]
    for (name, dependencies) in fuzzTargets {
        package.targets.append(
            .executableTarget(name: name, dependencies: ["FuzzSupport"] + dependencies, path: "Fuzz/Targets/\(name)"))
    }
}

// Shared Swift settings for every Swift target.
for target in package.targets where target.type != .system && target.type != .plugin {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.swiftLanguageMode(.v6))
    target.swiftSettings = settings
}
