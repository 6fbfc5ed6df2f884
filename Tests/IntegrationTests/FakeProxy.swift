/// A misbehaving SOCKS5 proxy, one port per fault, and a tiny DNS server:
/// python3 scripts the tests write into their folder and start in a namespace.
/// Both stop by themselves after ten minutes at most (the tests kill them by PID first).
enum FakeProxy {
    enum Fault: String, CaseIterable {
        /// Accepts, then closes at once.
        case close
        /// Reads the greeting and answers bytes that are no SOCKS5 at all.
        case garbage
        /// Reads the greeting and never answers.
        case stall
        /// Asks for username/password (method 2), then refuses them (RFC 1929 status 1).
        case badAuth

        var port: Int {
            switch self {
            case .close: 1090
            case .garbage: 1091
            case .stall: 1092
            case .badAuth: 1093
            }
        }
    }

    /// `python3 fake-proxy.py ADDRESS LOG`
    static let script = """
    import socket, sys, threading, time
    address, log_path = sys.argv[1], sys.argv[2]
    lock = threading.Lock()
    def log(text):
        with lock:
            with open(log_path, "a") as f:
                f.write(text + "\\n")
    def handle(fault, c):
        try:
            c.settimeout(60)
            log(fault + " accepted")
            if fault == "close":
                c.close(); return
            greeting = c.recv(512)
            log(fault + " greeting " + greeting.hex())
            if fault == "garbage":
                c.sendall(b"\\x17\\x03\\x03 this is not SOCKS\\r\\n")
                c.recv(512)
            elif fault == "stall":
                c.recv(512)
            elif fault == "badAuth":
                c.sendall(b"\\x05\\x02")
                auth = c.recv(512)
                log(fault + " auth " + auth.hex())
                c.sendall(b"\\x01\\x01")
        except Exception as e:
            log(fault + " " + repr(e))
        finally:
            c.close()
    def serve(fault, port):
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((address, port)); s.listen(16)
        while True:
            c, _ = s.accept()
            threading.Thread(target=handle, args=(fault, c), daemon=True).start()
    for fault, port in [\(Fault.allCases.map { "(\"\($0.rawValue)\", \($0.port))" }.joined(separator: ", "))]:
        threading.Thread(target=serve, args=(fault, port), daemon=True).start()
    time.sleep(600)

    """

    /// `python3 dns.py ADDRESS LOG`: every A query gets 10.89.0.7; other types an empty answer.
    static let dnsScript = """
    import socket, sys, time
    address, log_path = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((address, 53)); s.settimeout(1)
    deadline = time.time() + 600
    while time.time() < deadline:
        try:
            query, peer = s.recvfrom(2048)
        except socket.timeout:
            continue
        if len(query) < 17: continue
        labels, i = [], 12
        while i < len(query) and query[i] != 0 and len(labels) < 64:
            labels.append(query[i + 1:i + 1 + query[i]].decode("ascii", "replace")); i += 1 + query[i]
        qtype = int.from_bytes(query[i + 1:i + 3], "big")
        question = query[12:i + 5]
        with open(log_path, "a") as f: f.write("query %s type %d from %s\\n" % (".".join(labels), qtype, peer[0]))
        answers = b"\\xc0\\x0c\\x00\\x01\\x00\\x01\\x00\\x00\\x00\\x3c\\x00\\x04" + bytes([10, 89, 0, 7]) if qtype == 1 else b""
        header = query[:2] + b"\\x84\\x00\\x00\\x01" + (b"\\x00\\x01" if answers else b"\\x00\\x00") + b"\\x00\\x00\\x00\\x00"
        s.sendto(header + question + answers, peer)

    """
}
