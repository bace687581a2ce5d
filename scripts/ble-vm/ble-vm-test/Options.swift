// ble-vm-test's command-line flags (see main.swift for the modes).

struct Options {
    var mode = ""
    var adapter = "hci0"
    var psm = 0x0081
    var rtts = 200
    var bulk = 200_000
    var security = "low"
    var timeout = 30
    var rounds = 1
    var dead = "00:AA:01:01:00:01/public/0x00fe"
    var dataPath = "auto"
    var moveAfter = 5.0
    var seconds = 5.0
    /// Where `bench` and `echo` run their link loops: `main` (the main actor: one more
    /// thread hop per packet), `pool` (Swift's global pool, like a node's link tasks) or
    /// `reactor` (BLETransport.linkExecutor: the reactor thread).
    var executor = "main"
    /// GATT links this side dials: TX writes that may be unanswered (gatt_write_window).
    var gattWindow = 1

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        mode = iterator.next() ?? ""
        while let flag = iterator.next() {
            let value = iterator.next() ?? ""
            switch flag {
            case "--adapter": adapter = value
            case "--psm": psm = value.hasPrefix("0x") ? Int(value.dropFirst(2), radix: 16) ?? psm : Int(value) ?? psm
            case "--rtt": rtts = Int(value) ?? rtts
            case "--bulk": bulk = Int(value) ?? bulk
            case "--security": security = value
            case "--timeout": timeout = Int(value) ?? timeout
            case "--rounds": rounds = Int(value) ?? rounds
            case "--dead": dead = value
            case "--data-path": dataPath = value
            case "--move-after": moveAfter = Double(value) ?? moveAfter
            case "--seconds": seconds = Double(value) ?? seconds
            case "--executor": executor = value
            case "--gatt-window": gattWindow = Int(value) ?? gattWindow
            default: fatal("unknown flag \(flag)")
            }
        }
    }
}
