import Foundation
import MeshCore

extension TextReport {
    /// One event as `scmesh events` prints it: `#id time kind fields…` (control
    /// characters in remote data escaped).
    public static func event(_ event: NodeEvent) -> String {
        "#\(event.id)  \(timestamp(event.time))  \(escaped(event.event.description))"
    }
}
