import MeshNode
import PipeTransport

extension TransportFactory {
    /// The pipe transport for the node's registry: section `transports.pipe`.
    public static func pipe(defaultPriority: Int = 5) -> TransportFactory {
        TransportFactory(
            name: "pipe", defaultPriority: defaultPriority,
            summary: "Unix domain sockets between processes of one machine",
            configuration: PipeTransport.Configuration.self,
            validate: { try $0.validate() }
        ) { settings, context in
            PipeTransport(configuration: settings, name: context.name)
        }
    }
}

extension PipeTransport.Configuration: TransportConfiguration {}
