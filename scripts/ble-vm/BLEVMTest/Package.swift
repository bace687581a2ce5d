// swift-tools-version: 6.1
// The guest program of scripts/ble-vm/run.sh: BLETransport on a real kernel Bluetooth
// stack. Depends on the SCMesh package at the repository root (or at
// $SCMESH_PACKAGE_PATH, for a private development copy).
import PackageDescription

let scmesh = Context.environment["SCMESH_PACKAGE_PATH"] ?? "../../.."

let package = Package(
    name: "BLEVMTest",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "SCMesh", path: scmesh),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "ble-vm-test",
            dependencies: [
                .product(name: "TransportBLE", package: "SCMesh"),
                .product(name: "MeshCore", package: "SCMesh"),
                .product(name: "MeshCrypto", package: "SCMesh"),
                .product(name: "MeshTesting", package: "SCMesh"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
                .swiftLanguageMode(.v6),
            ]
        )
    ]
)
