// MeshBench: SCMesh's benchmarks, each figure next to a baseline measured in the same
import Foundation
// run. Usage: swift run -c release MeshBench [router|crypto|tcp|failover|all]
let which = CommandLine.arguments.dropFirst().first ?? "all"
guard ["router", "crypto", "tcp", "failover", "all"].contains(which) else {
    print("usage: MeshBench [router|crypto|tcp|failover|all]")
    exit(2)
}

func report(_ title: String, _ figures: [BenchFigure]) {
    print("== \(title)")
    for figure in figures { print(figure.line) }
}

if which == "router" || which == "all" {
    report("router over LoopbackTransport", try await RouterBench.run())
}
if which == "crypto" || which == "all" {
    report("crypto (libsodium)", try CryptoBench.run())
}
if which == "tcp" || which == "all" {
    let raw = try await TCPBench.rawBaselines()
    report("raw TCP baselines", raw)
    report("TCP transport links", try await TCPBench.linkFigures(baselines: raw))
    report("full stack over TCP", try await RouterBench.fullStackTCP(raw: raw))
}
if which == "failover" || which == "all" {
    report("failover between two transports (default escalation settings)", try await FailoverBench.run())
}
