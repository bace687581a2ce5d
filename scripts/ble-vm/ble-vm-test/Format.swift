// Number formatting for ble-vm-test's report lines (no Foundation in the guest binary).

func ms(_ duration: Duration) -> String {
    let value = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    return fixed(value, 3)
}

func fixed(_ value: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int((value * scale).rounded())
    let whole = scaled / Int(scale)
    var fraction = String(abs(scaled) % Int(scale))
    while fraction.count < digits { fraction = "0" + fraction }
    return digits == 0 ? "\(whole)" : "\(whole).\(fraction)"
}

func mtuMultiple(_ count: Int, _ mtu: Int) -> String {
    "\(fixed(Double(count) / Double(mtu), 1))× the \(mtu)-byte MTU"
}
