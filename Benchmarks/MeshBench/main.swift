import Foundation

// MeshBench: SCMesh's benchmarks, each figure next to a baseline measured in the same
// run. Usage: swift run -c release MeshBench [router|crypto|tcp|failover|store|cli|clibulk|sim|idle|all]
// (`sim` and `idle` are not part of `all`: they take minutes; `MeshBench sim --help` lists
// its flags; `idle --seconds N` sets the length of each measured window, default 60.
// `clibulk --set KEY=VALUE ...` starts both nodes with those config settings, e.g.
// `--set store.inbox_file_threshold_bytes=1073741824` to keep received payloads in SQLite;
// `clibulk --client PATH` also times the sends of another scmesh binary, in turns with the
// default one, e.g. one built with --static-swift-stdlib.)
let which = CommandLine.arguments.dropFirst().first ?? "all"
guard ["router", "crypto", "tcp", "failover", "store", "cli", "clibulk", "sim", "idle", "all"].contains(which) else {
    print("usage: MeshBench [router|crypto|tcp|failover|store|cli|clibulk|sim|idle|all]")
    exit(2)
}

if which == "sim" {
    do {
        try await SimBench.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
    } catch {
        print("MeshBench sim: \(error)")
        exit(2)
    }
    exit(0)
}

if which == "idle" {
    do {
        let figures = try await IdleBench.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
        #if DEBUG
        let build = "debug"
        #else
        let build = "release"
        #endif
        print("== idle cost (\(build) scmesh): a node with two peers under each power profile, against the node alone")
        for figure in figures { print(figure.line) }
    } catch {
        print("MeshBench idle: \(error)")
        exit(2)
    }
    exit(0)
}

func report(_ title: String, _ figures: [BenchFigure]) {
    print("== \(title)")
    for figure in figures { print(figure.line) }
}

func report(goals: [BenchGoal]) {
    print("== ratios against their goals")
    for goal in goals { print(goal.line) }
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
    let links = try await TCPBench.linkFigures(baselines: raw)
    report("TCP transport links", links)
    let fullStack = try await RouterBench.fullStackTCP(raw: raw, links: links)
    report("full stack over TCP", fullStack)
    // The physical limit of an encrypted stream on these cores, measured now.
    let rawSeal = CryptoBench.rawSealRate(size: 65_000)
    let bulk = fullStack.first(where: { $0.name.hasPrefix("full stack TCP bulk") }).map { bulk in
        BenchFigure(
            name: "full stack TCP bulk against the raw AEAD seal rate",
            value: bulk.value,
            unit: "MB/s",
            baseline: ("raw chacha20poly1305_ietf seal 65 KB frames, one core", rawSeal)
        )
    }
    if let bulk { report("full stack over TCP against the cipher", [bulk]) }
    report(goals: [
        .of(
            fullStack.first { $0.name == RouterBench.fullStackSmallName },
            label: "full stack TCP 64 B acked / TCP link raw 64 B frames",
            goal: 0.2
        ),
        .of(bulk, label: "full stack TCP bulk / raw seal 65 KB one core", goal: 0.5),
        .of(
            fullStack.first { $0.name == RouterBench.fullStackRTT50Name },
            label: "full stack 64 B round trip p50 / raw TCP ping-pong p50",
            goal: 2,
            higherIsBetter: false
        ),
    ])
}
if which == "failover" || which == "all" {
    report("failover between two transports (default escalation settings)", try await FailoverBench.run())
}
if which == "store" || which == "all" {
    let figures = try await StoreBench.run()
    report("store and forward: the cost of durability", figures)
    report(goals: [
        .of(
            figures.first { $0.name == StoreBench.name(size: 64) },
            label: "durable queue-and-deliver 64 B / in-memory",
            goal: 0.5
        ),
        .of(
            figures.first { $0.name == StoreBench.name(size: 4_096) },
            label: "durable queue-and-deliver 4 KiB / in-memory",
            goal: 0.5
        ),
    ])
}
if which == "cli" || which == "all" {
    report("scmesh from the shell (release nodes over TCP on loopback)", try await CLIBench.run())
}
if which == "clibulk" || which == "all" {
    // Pairs: `--set KEY=VALUE` (both nodes) and `--client PATH` (a second scmesh binary
    // whose sends are timed beside the default one's, e.g. a --static-swift-stdlib build).
    let arguments = which == "clibulk" ? Array(CommandLine.arguments.dropFirst(2)) : []
    guard arguments.count % 2 == 0,
        stride(from: 0, to: arguments.count, by: 2).allSatisfy({ ["--set", "--client"].contains(arguments[$0]) })
    else {
        print("usage: MeshBench clibulk [--set KEY=VALUE ...] [--client PATH]")
        exit(2)
    }
    let pairs = stride(from: 0, to: arguments.count, by: 2).map { (arguments[$0], arguments[$0 + 1]) }
    let settings = pairs.filter { $0.0 == "--set" }.flatMap { [$0.0, $0.1] }
    let client = pairs.last { $0.0 == "--client" }?.1
    let title = "scmesh send - of 10 MiB over the HTTP API (release nodes over TCP on loopback)"
    report(
        settings.isEmpty ? title : title + ", nodes with " + settings.joined(separator: " "),
        try await CLIBench.bulk(nodeSettings: settings, otherClient: client)
    )
}
