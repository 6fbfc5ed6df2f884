import Testing

/// Stdlib-only WebSocket peers (RFC 6455) for the integration tests:
/// Debian's curl has no WebSocket client, and Python's websockets package is
/// not among the test peers. The server echoes text ("echo: " first) and
/// binary (reversed), answers pings and closes; the client runs a fixed
/// exchange (a text, a fragmented text, a ping, 300 bytes of binary, a
/// 70,000-byte text, a close) and prints what came back; with `hold`
/// after its URL, it stays open after the first echo; with `proxy
/// HOST:PORT`, it goes through that HTTP proxy. With `deflate` both speak
/// permessage-deflate (RFC 7692), Python's zlib compressing.
enum WebSocketPeers {
    static let server = #"""
#!/usr/bin/env python3
"""Minimal RFC 6455 echo server (stdlib only). Usage: python3 server.py HOST PORT [CERT KEY] (TLS with them) [deflate]
With deflate it accepts permessage-deflate (RFC 7692, context takeover both ways) when offered."""
import base64, hashlib, socket, ssl, struct, sys, zlib

DEFLATE = "deflate" in sys.argv
if DEFLATE:
    sys.argv.remove("deflate")

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_CONNS, TIMEOUT = 10, 30


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed mid-frame")
        buf += chunk
    return buf


def read_frame(sock):
    b0, b1 = recv_exact(sock, 2)
    fin, opcode, masked, length = b0 & 0x80, b0 & 0x0F, b1 & 0x80, b1 & 0x7F
    if length == 126:
        length = struct.unpack("!H", recv_exact(sock, 2))[0]
    elif length == 127:
        length = struct.unpack("!Q", recv_exact(sock, 8))[0]
    mask = recv_exact(sock, 4) if masked else None
    payload = recv_exact(sock, length)
    if mask:
        payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
    return bool(fin), opcode, payload, bool(b0 & 0x40)


def send_frame(sock, opcode, payload, deflater=None):
    rsv1 = 0
    if deflater and opcode in (0x1, 0x2):  # RFC 7692 §7.2.1: compress, then drop the trailing 00 00 FF FF
        payload = (deflater.compress(payload) + deflater.flush(zlib.Z_SYNC_FLUSH))[:-4]
        rsv1 = 0x40
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | rsv1 | opcode, n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | rsv1 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | rsv1 | opcode, 127, n)
    sock.sendall(head + payload)


def handshake(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            if data:
                raise ConnectionError("closed during handshake")
            return False  # bare connect (e.g. a readiness probe): not an error
        data += chunk
        if len(data) > 65536:
            raise ValueError("request head too large")
    headers = {}
    for line in data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    key = headers.get("sec-websocket-key")
    if not key:
        sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        raise ValueError("missing Sec-WebSocket-Key")
    accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    deflate = DEFLATE and "permessage-deflate" in headers.get("sec-websocket-extensions", "")
    sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n"
                  % (accept, "Sec-WebSocket-Extensions: permessage-deflate\r\n" if deflate else "")).encode())
    return "deflate" if deflate else True


def serve(sock):
    accepted = handshake(sock)
    if not accepted:
        return
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15) if accepted == "deflate" else None
    inflater = zlib.decompressobj(-15) if accepted == "deflate" else None
    msg_op, parts, compressed = None, [], False
    while True:
        fin, opcode, payload, rsv1 = read_frame(sock)
        if opcode == 0x9:                      # ping -> pong
            send_frame(sock, 0xA, payload)
        elif opcode == 0xA:                    # unsolicited pong: ignore
            pass
        elif opcode == 0x8:                    # close -> echo status code
            send_frame(sock, 0x8, payload[:2])
            return
        elif opcode in (0x1, 0x2, 0x0):
            if opcode != 0x0:
                msg_op, parts, compressed = opcode, [], rsv1
            elif msg_op is None:
                raise ValueError("continuation frame without a started message")
            parts.append(payload)
            if fin:
                msg = b"".join(parts)
                if compressed:
                    msg = inflater.decompress(msg + b"\x00\x00\xff\xff")
                if msg_op == 0x1:
                    send_frame(sock, 0x1, b"echo: " + msg, deflater)
                else:
                    send_frame(sock, 0x2, msg[::-1], deflater)
                msg_op, parts = None, []
        else:
            raise ValueError("unknown opcode %#x" % opcode)


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    lsock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((host, port))
    lsock.listen(5)
    tls = None
    if len(sys.argv) > 4:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(sys.argv[3], sys.argv[4])
    for _ in range(MAX_CONNS):
        conn, _addr = lsock.accept()
        conn.settimeout(TIMEOUT)
        try:
            if tls:
                conn = tls.wrap_socket(conn, server_side=True)
            serve(conn)
        except Exception as e:
            print("server: connection error: %r" % e, file=sys.stderr)
        finally:
            conn.close()
    lsock.close()


if __name__ == "__main__":
    main()
"""#

    static let client = #"""
#!/usr/bin/env python3
"""Minimal RFC 6455 test client (stdlib only).
Usage: python3 client.py ws[s]://HOST:PORT/path [hold | proxy HOST:PORT (plain ws through an HTTP proxy)] [deflate]
With deflate it offers permessage-deflate (RFC 7692) and compresses its messages when the server accepts."""
import base64, hashlib, os, socket, ssl, struct, sys, time, zlib

DEFLATE = "deflate" in sys.argv
if DEFLATE:
    sys.argv.remove("deflate")
deflater = inflater = None
from urllib.parse import urlsplit

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def fail(msg):
    print("client: " + msg, file=sys.stderr)
    sys.exit(1)


def say(line):
    print(line, flush=True)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            fail("connection closed unexpectedly")
        buf += chunk
    return buf


def send_frame(sock, opcode, payload, fin=True, rsv1=False):
    b0, n, mask = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode, len(payload), os.urandom(4)
    if n < 126:
        head = struct.pack("!BB", b0, 0x80 | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", b0, 0x80 | 127, n)
    sock.sendall(head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))


def read_message(sock):
    """Return (opcode, payload) of the next message or control frame."""
    op, parts, compressed = None, [], False
    while True:
        b0, b1 = recv_exact(sock, 2)
        fin, opcode, length = b0 & 0x80, b0 & 0x0F, b1 & 0x7F
        if b1 & 0x80:
            fail("server frame is masked")
        if length == 126:
            length = struct.unpack("!H", recv_exact(sock, 2))[0]
        elif length == 127:
            length = struct.unpack("!Q", recv_exact(sock, 8))[0]
        payload = recv_exact(sock, length)
        if opcode >= 0x8:
            return opcode, payload
        if opcode != 0:
            op, parts, compressed = opcode, [], bool(b0 & 0x40)
        elif op is None:
            fail("unexpected continuation frame")
        parts.append(payload)
        if fin:
            data = b"".join(parts)
            if compressed:
                data = inflater.decompress(data + b"\x00\x00\xff\xff")
            return op, data


def send_message(sock, opcode, payload, pieces=1):
    """A data message, compressed when deflate was accepted, in `pieces` frames."""
    rsv1 = deflater is not None
    if rsv1:
        payload = (deflater.compress(payload) + deflater.flush(zlib.Z_SYNC_FLUSH))[:-4]
    size = max(1, -(-len(payload) // pieces))
    chunks = [payload[i:i + size] for i in range(0, len(payload), size)] or [b""]
    for i, chunk in enumerate(chunks):
        send_frame(sock, opcode if i == 0 else 0x0, chunk, fin=i == len(chunks) - 1, rsv1=rsv1 and i == 0)


def expect(sock, want_op):
    op, payload = read_message(sock)
    if op != want_op:
        fail("expected opcode %#x, got %#x (payload %r)" % (want_op, op, payload[:60]))
    return payload


def main():
    url = urlsplit(sys.argv[1])
    if url.scheme not in ("ws", "wss") or not url.hostname:
        fail("URL must be ws://HOST:PORT/path or wss://...")
    port = url.port or (443 if url.scheme == "wss" else 80)
    target = url.path or "/"
    if sys.argv[2:3] == ["proxy"]:  # an HTTP proxy takes the request in absolute form
        proxy_host, proxy_port = sys.argv[3].rsplit(":", 1)
        sock = socket.create_connection((proxy_host, int(proxy_port)), timeout=10)
        target = "http://%s:%d%s" % (url.hostname, port, target)
    else:
        sock = socket.create_connection((url.hostname, port), timeout=10)
    if url.scheme == "wss":  # the system's trust store (under sluice exec: with Sluice's CA)
        sock = ssl.create_default_context().wrap_socket(sock, server_hostname=url.hostname)
    key = base64.b64encode(os.urandom(16)).decode()
    host = url.hostname if ":" not in url.hostname else "[%s]" % url.hostname
    sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n"
                  % (target, host, port, key, "Sec-WebSocket-Extensions: permessage-deflate\r\n" if DEFLATE else "")).encode())
    head = b""
    while b"\r\n\r\n" not in head:  # read byte-wise so no frame bytes are consumed
        head += recv_exact(sock, 1)
    lines = head.decode("latin-1").split("\r\n")
    if len(lines[0].split()) < 2 or lines[0].split()[1] != "101":
        fail("bad status line: %r" % lines[0])
    headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
    want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    if headers.get("sec-websocket-accept") != want:
        fail("bad Sec-WebSocket-Accept: %r" % headers.get("sec-websocket-accept"))
    global deflater, inflater
    if DEFLATE:
        if "permessage-deflate" not in headers.get("sec-websocket-extensions", ""):
            fail("the server did not accept permessage-deflate")
        deflater, inflater = zlib.compressobj(6, zlib.DEFLATED, -15), zlib.decompressobj(-15)

    send_message(sock, 0x1, b"hello")
    say(expect(sock, 0x1).decode())
    if sys.argv[2:] == ["hold"]:  # stays open, for a test that stops Sluice meanwhile
        time.sleep(30)
        return

    if deflater:
        send_message(sock, 0x1, b"fragmented message", pieces=3)
    else:
        send_frame(sock, 0x1, b"fragm", fin=False)
        send_frame(sock, 0x0, b"ented mes", fin=False)
        send_frame(sock, 0x0, b"sage")
    say(expect(sock, 0x1).decode())

    send_frame(sock, 0x9, b"p1")
    if expect(sock, 0xA) != b"p1":
        fail("pong payload mismatch")
    say("pong p1")

    send_message(sock, 0x2, bytes(range(256)) + bytes(44))
    data = expect(sock, 0x2)
    say("binary %d %s" % (len(data), hashlib.sha256(data).hexdigest()))

    send_message(sock, 0x1, b"x" * 70000)
    say(str(len(expect(sock, 0x1))))

    send_frame(sock, 0x8, struct.pack("!H", 1000) + b"bye")
    payload = expect(sock, 0x8)
    if len(payload) < 2:
        fail("close frame without status code")
    say("closed %d" % struct.unpack("!H", payload[:2])[0])
    sock.close()


if __name__ == "__main__":
    try:
        main()
    except (OSError, ValueError, UnicodeDecodeError) as e:
        fail("error: %r" % e)
"""#
}

extension ServerPair {
    /// Starts `WebSocketPeers.server` in the server namespace on
    /// 10.88.0.2:`port` (with TLS when given a certificate and key, and
    /// accepting permessage-deflate with `deflate`) and
    /// returns the path of the client script, for the command to run.
    func startWebSocketServer(port: Int, tls: (certificate: String, key: String)? = nil, deflate: Bool = false) throws -> String {
        let serverScript = path("ws-server.py"), clientScript = path("ws-client.py")
        try WebSocketPeers.server.write(toFile: serverScript, atomically: true, encoding: .utf8)
        try WebSocketPeers.client.write(toFile: clientScript, atomically: true, encoding: .utf8)
        try net.start(["/usr/bin/python3", serverScript, "10.88.0.2", "\(port)"] + (tls.map { [$0.certificate, $0.key] } ?? [])
                      + (deflate ? ["deflate"] : []), in: server)
        #expect(waitForListener("10.88.0.2:\(port)"))
        return clientScript
    }
}
