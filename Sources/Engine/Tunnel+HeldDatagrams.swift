internal import Stack
internal import Sys

/// A new UDP flow's first datagrams wait while something is settled: its
/// owner (`awaitingOwner`), its name's real address (`udpAwaitingResolution`),
/// its proxy's association (`associationQueue`). Each keeps copies, at most
/// `Tunnel.heldDatagramLimit`, and sends them in order once it can.
extension Dictionary where Key == FlowKey, Value == [[UInt8]] {
    /// Keeps a copy of `payload` with `key`'s other waiting datagrams (past
    /// the limit it is dropped, as a network would); false when `key` waits for nothing here.
    mutating func hold(_ payload: UnsafeRawBufferPointer, for key: FlowKey) -> Bool {
        guard !isEmpty, self[key] != nil else { return false }
        if self[key]!.count < Tunnel.heldDatagramLimit { self[key]!.append(Array(payload)) }
        return true
    }
}

extension Tunnel {
    /// Sends the datagrams a flow held, in order, now that its socket is open.
    func sendHeld(_ held: [[UInt8]], on flow: UDPFlow, sink: inout TunSink) {
        // The first one's hop limit (the datagram being handled now may be another flow's).
        appHopLimit = heldHopLimits.removeValue(forKey: flow.key) ?? 64
        for datagram in held {
            if let error = datagram.withUnsafeBytes({ sendDatagram($0, on: flow) }) { datagramFailed(flow, error, sink: &sink) }
        }
    }
}
