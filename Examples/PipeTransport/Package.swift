// swift-tools-version: 6.1
// An out-of-tree SCMesh transport: frames over Unix domain sockets (SOCK_SEQPACKET),
// registered in a small custom node binary. It depends on SCMesh by path and edits
// nothing in it. Build and test: scripts/test-example.sh (from the repository root).
import PackageDescription

let package = Package(
    name: "PipeTransport",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PipeTransport", targets: ["PipeTransport"]),
        .executable(name: "pipe-node", targets: ["PipeNode"]),
    ],
    dependencies: [
        .package(name: "SCMesh", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // The transport: MeshCore only.
        .target(
            name: "PipeTransport",
            dependencies: [
                .product(name: "MeshCore", package: "SCMesh"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A node binary that knows the built-in transports plus "pipe".
        .executableTarget(
            name: "PipeNode",
            dependencies: [
                "PipeTransport",
                .product(name: "MeshCore", package: "SCMesh"),
                .product(name: "MeshNode", package: "SCMesh"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "PipeTransportTests",
            dependencies: [
                "PipeTransport", "PipeNode",
                .product(name: "MeshCore", package: "SCMesh"),
                .product(name: "MeshNode", package: "SCMesh"),
                .product(name: "MeshStore", package: "SCMesh"),
                .product(name: "MeshTesting", package: "SCMesh"),
            ]
        ),
    ]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.swiftLanguageMode(.v6))
    target.swiftSettings = settings
}
