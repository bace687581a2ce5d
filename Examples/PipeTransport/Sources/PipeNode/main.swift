// pipe-node: an SCMesh node that knows the built-in transports plus "pipe".
//   pipe-node CONFIG.yaml DATA_DIR
import Foundation
import Logging
import MeshNode

TransportRegistry.register(.pipe())

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, let file = arguments.first, let dataDirectory = arguments.last else {
    FileHandle.standardError.write(Data("usage: pipe-node CONFIG.yaml DATA_DIR\n".utf8))
    exit(2)
}
do {
    let config = try NodeConfiguration.load(file: file)
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = config.node.logLevel
        return handler
    }
    try await buildNode(config: config, dataDirectory: dataDirectory).run()
} catch {
    FileHandle.standardError.write(Data("pipe-node: \(error)\n".utf8))
    exit(1)
}
