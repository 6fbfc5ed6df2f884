// sluice: a thin command line over Engine.
import Engine
import Sys

let usage = """
usage: sluice [-v | -q] COMMAND [OPTIONS]

-v shows every flow's life on stderr (as SLUICE_DEBUG=1); -q drops the
per-flow warnings and the exit summary (errors stay). Without either, a
profile's loglevel decides (error is -q, debug is -v).

Sluice puts a program behind a TUN device and handles its traffic in user space.

commands:
  exec [--profile FILE] [CAPTURE] [--dns fake|forward|off] [--host-loopback] [--forward SPEC|auto] [--root] [--mtu N] [--busy-poll US]
       [--faults SPEC [--fault-seed N]] [--control PATH | --no-control] [--ca-dir DIR] [--] CMD [ARGS...]
        Run CMD in a fresh network namespace whose traffic (IPv4 and IPv6)
        goes through Sluice: TCP, UDP and ping are relayed from Sluice's own
        namespace, TCP by Sluice's user-space TCP stack, directly or as the
        profile's rules say (proxies, groups, rejections, URL and header
        rewrites, Map Local, [Statistics]; docs/profile.md). SIGHUP reloads
        the profile (a profile with errors keeps the old one). A refused connection
        reaches CMD as a RST, an unreachable host as ICMP unreachable. Exits
        with CMD's status; the namespace is removed, also on Ctrl-C. A
        terminal's Ctrl-C reaches CMD too and CMD decides, as under sudo:
        Sluice ends when CMD does (an interactive shell keeps its tunnel);
        kill -INT or -TERM stops Sluice at once. Started
        through sudo, CMD runs as the user who typed it. Started by an
        ordinary user, exec needs no root: CMD's namespace is made in a user
        namespace (as slirp4netns and pasta do), CMD and Sluice run as that
        user, pings go through ping sockets (the host's ping_group_range
        must include the user's group), and /dev/net/tun must be open to
        the user (mode 0666, as Debian's udev makes it). --root runs CMD as
        root: Sluice's own root instead of the sudo user, or without root
        the root of CMD's user namespace (it administers its own network and
        binds any port, and nothing beyond).
        CMD alone sees Sluice's DNS (10.233.0.53, fd00:233::53; UDP and
        TCP): by default names get fake IPs from 198.18.0.0/15 that Sluice
        maps back to names and resolves through the host's resolvers; --dns
        forward relays queries to them; --dns off leaves CMD the host's
        resolv.conf. Without fake IPs, rules name a flow by its Host or SNI
        (TLS or QUIC), else by the DNS answer that gave its address. The
        profile's [Host] lines answer names with addresses or aliases, or
        send them to a resolver of their own (*.corp.test = server:10.0.0.53).
        --forward [ADDRESS:]PORT:APP-PORT[/udp] (repeatable) listens on PORT
        (127.0.0.1 unless ADDRESS is given) and connects each client to
        CMD's APP-PORT, for servers CMD runs (as pasta -t); with /udp, each
        client's datagrams go to APP-PORT and CMD's answers back (pasta -u).
        --forward auto forwards every TCP port CMD listens on and UDP port it
        serves on, from the same port on 127.0.0.1, while it does (pasta -t
        auto, -u auto).
        HTTPS to the names in the profile's [MITM] hostname is intercepted:
        Sluice answers the app's TLS 1.3 with a certificate from its own CA
        (made in --ca-dir DIR on first use; see `sluice ca`), runs the same
        rewrites, Map Local, rules, statistics and HAR on the requests
        inside as on plain HTTP, and opens its own TLS (1.3, else 1.2) to
        the real server, whose certificate is checked against Sluice's
        SSL_CERT_FILE (else
        /etc/ssl/certs/ca-certificates.crt); a refused one is a 502 for that
        request. CMD gets a CA bundle: what Sluice trusts plus Sluice's CA
        (bound over the system's, and in SSL_CERT_FILE, CURL_CA_BUNDLE,
        REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS, GIT_SSL_CAINFO). Apps speak HTTP/1.1 inside ([MITM] h2 = true:
        HTTP/2 when they offer it, each stream one request, and HTTP/2 on
        to servers that offer it, pipelined HTTP/1.1 to the others). Apps that offer only TLS 1.2, or only
        HTTP/2 (gRPC) without h2 = true, pass through untouched; QUIC to
        those names is refused so apps use TCP.
        --host-loopback lets CMD reach services on Sluice's own loopback
        (127.0.0.1, ::1) at 10.233.0.2 and fd00:233::2; off by default.
        --mtu sets the TUN's MTU (default: the profile's mtu, else 65520,
        as slirp4netns: the path beyond the TUN is Sluice's sockets, so big
        segments are cheap). Without --dns, a profile's dns-mode = forward
        switches DNS to forward; its dns-server and fake-ip-range apply too.
        --busy-poll US: after running out of work, Sluice polls up to US
        microseconds (default 50, 0 to 1000; 0 never) for the next packet
        before it sleeps. Waking a sleeping process costs more than Sluice's
        own work for a small request; the window adapts, so a quiet tunnel
        sleeps at once and a busy one spends at most US per lull. While it may
        poll, a short read from a server (under 1 KiB; in HTTP mode, one that
        leaves a response part-way) waits up to 20 µs for what follows it, so
        that a head and its body reach the app as one segment; 0 turns that
        off too.
        --faults drop=P,duplicate=P,reorder=P,corrupt=P,delay=Nms,rate=R puts a
        seeded fault injector between the TUN and the stack, both ways;
        rate=2mbit (kbit, mbit, gbit) makes each direction a link of that
        rate with a 200 ms queue, for a slow network (with --mtu 1500).
        CAPTURE (also for run; the profile's [Capture] fills what is left out):
          --pcap FILE [--pcap-filter 'tcp port 80'] [--snaplen N]
                [--pcap-rotate-size BYTES] [--pcap-rotate-count N]
                every packet crossing the TUN, both ways (LINKTYPE_RAW)
          --pcap-per-flow DIR   also (or instead) one pcap file per flow in
                DIR, named NNNNNN-PROTO-APP.PORT-REMOTE.PORT.pcap
                Rules with the capture option (DOMAIN,api.test,DIRECT,capture)
                make both keep only the flows those rules decide.
          --flow-log FILE   one JSON line per connection and per HTTP request
          --har FILE [--har-body-limit BYTES]   HTTP exchanges, as they finish
                (a WebSocket as one entry with its messages, when it ends)
  run --netns NAME|FILE | --pid PID [--profile FILE] [CAPTURE] [--dns fake|forward|off] [--forward SPEC|auto] [--mtu N] [--busy-poll US]
       [--control PATH | --no-control] [--ca-dir DIR]
        Attach to an existing network namespace: NAME (ip netns), a
        namespace FILE (/proc/PID/ns/net, or where rootless container tools
        bind theirs), or process PID's (as slirp4netns takes one). A TUN,
        its addresses and routes more specific than any default route are
        added there, and its traffic is relayed like exec's until Ctrl-C;
        then all of it goes. Commands started with `ip netns exec NAME` get
        Sluice's DNS through /etc/netns/NAME/resolv.conf (unless that file
        already exists); a FILE's or PID's programs keep their resolver
        (point them at 10.233.0.53 for Sluice's). Without root, only a
        namespace of the user's own (made in a user namespace of theirs,
        such as a rootless container's or `unshare --user --net`'s) can be
        attached. --forward as for exec, to the namespace's servers.
        [MITM] as for exec, but the namespace's programs must be told to
        trust Sluice's CA themselves (`sluice ca` prints how).
  run --tun [--exclude PREFIX]... [--dns off|fake|forward] [--profile FILE] [CAPTURE] [--mtu N] [--busy-poll US]
       [--control PATH | --no-control] [--ca-dir DIR]
        Whole-host mode: the namespace Sluice runs in sends every unmarked
        packet (policy rule, table 2333) into Sluice's TUN; Sluice's own
        sockets carry mark 0x2333 and go out directly. --exclude PREFIX
        (192.168.1.0/24, 192.0.2.7, fd00::/8; repeatable) keeps a
        destination out of the TUN: the LAN, or where an SSH session comes
        from. --dns fake or forward answers every DNS query that enters the
        TUN (to any server, UDP or TCP port 53) with Sluice's DNS, so rules
        see names in whole-host mode too; off (the default) relays them.
        On a gateway that forwards for a LAN, --exclude the LAN and the
        devices' traffic goes through Sluice too (SRC-IP rules see each
        device). The rules and routes are removed on exit. Try it inside a
        namespace that plays a host.
  ca [--dir DIR | --ca-dir DIR]
        Make Sluice's CA for HTTPS interception if there is none in DIR
        (default /var/lib/sluice for root, else $XDG_DATA_HOME/sluice or
        ~/.local/share/sluice): ca.pem, and ca.key readable only by you.
        Prints where they are, ca.pem's SHA-256 fingerprint, and how to
        trust it. A folder or file that is a link, someone else's, or
        writable by others is refused. exec and run make it themselves
        when a profile first needs it.
  dump [--count N] [--seconds S] [--no-ping] [--mtu N] [--] CMD [ARGS...]
        Run CMD in a fresh network namespace whose default routes (IPv4 and
        IPv6) go into Sluice's TUN, and print every packet CMD sends, like
        tcpdump. Pings are answered locally; other traffic is only shown.
        Stops when CMD exits (its exit status becomes Sluice's), after N
        packets, after S seconds, or on Ctrl-C; the namespace is removed.
        Without root, the namespace is made in a user namespace, as exec's.
  check FILE [--dump json]
        Load the profile FILE as a run would (with the RULE-SET and
        DOMAIN-SET lists and GeoIP/ASN databases it names) and report every
        error as FILE:LINE: error: ... with a hint (exit 1), or a summary,
        any warnings and the rules an earlier rule always beats (exit 0).
        --dump json prints what Sluice understood. A Surge profile loads as
        it is: Surge's settings Sluice has no use for are warnings that say
        why. docs/profile.md describes the format.
  match FILE URL [--method M] [--header 'Name: value']... [--process PROGRAM] [--uid N] [--source IP]
        Explain how the profile FILE would treat one HTTP request: which URL
        Rewrite, Map Local, rule (and so policy), Header Rewrite and Body
        Rewrite lines apply, in that order, with their line numbers and why. --process
        (a path, or a file name) and --uid say who asks, for PROCESS-NAME,
        PROCESS-PATH and UID rules; --source where from, for SRC-IP rules.
        Starts nothing.
  proxy [--listen ADDR:PORT] [--http-listen ADDR:PORT] [--profile FILE] [--auth USER:PASS]
        [--har FILE [--har-body-limit BYTES]] [--flow-log FILE] [--control PATH | --no-control] [--sniff] [--ca-dir DIR]
        Local proxy servers whose clients follow the profile's rules (DIRECT,
        upstream proxies, REJECT), as the tunnel's flows do: SOCKS5 (CONNECT,
        and UDP ASSOCIATE, through udp-relay proxies too) on --listen (default
        127.0.0.1:1080) and an HTTP proxy (CONNECT and absolute-form requests,
        kept alive) on --http-listen; without either, the profile's
        socks5-listen and http-listen if it has them. Plain HTTP requests also get the
        profile's URL Rewrite, Map Local, Header and Body Rewrite and [Statistics]
        (tables in the summary); --har and --flow-log record them (and
        --flow-log every connection) as exec's do. Tunnels (CONNECT, SOCKS5)
        to names in the profile's [MITM] hostname are intercepted as exec
        intercepts HTTPS: the same rules per request, with Sluice's CA from
        --ca-dir, which the clients must trust (`sluice ca`). --auth requires RFC 1929
        / Basic credentials on both. An address other than loopback needs
        --auth: no open relays.
        --sniff lets DOMAIN rules see the name behind a tunnel to an address
        (a client that resolved it): the client is answered first and the
        rules read its TLS SNI or Host; failures after that are resets.
        UDP ASSOCIATE's QUIC datagrams to an address are named by the SNI
        in their Initial packets.
        SIGHUP reloads the profile; Ctrl-C stops and prints a summary. The
        control commands below work on it too (each connection a flow).
  replay FILE.pcap [--profile FILE] [--format table|flowlog|har]
        Read a capture (tcpdump's, or Sluice's own --pcap), follow every TCP
        connection both ways, every UDP session and ping, and report what the
        profile would do to each flow and HTTP request: rule, policy, and
        forward, redirect, mock, reject or drop. DNS answers in the capture
        name the addresses they gave.
  status [--control PATH] [--json]
        Ask a running Sluice (exec, run or proxy) for its counters, its open
        flows' count, its [Statistics] books and its proxy groups.
  flows [--control PATH] [--json]
        List the open flows: id, transport, addresses, domain, bytes, state.
  requests [--last N] [--follow [--count N]] [--http] [--control PATH] [--json]
        The requests and connections that finished last (default 20; Sluice
        keeps 512), a line each: HTTP requests (those HTTP mode relays: a
        profile with rewrites, Map Local or [Statistics], or --har) with
        method, URL, status, time, body size, rule and policy; connections
        with addresses, name, status, bytes, rule and policy. --follow then
        prints each new one as it finishes (it waits in Sluice for the
        next: GET /requests?wait=), until Ctrl-C or N lines in all
        (--count N: as tail -f | head -n N); --http shows only HTTP
        requests; --json prints each as the flow log's line,
        {"id": N, "line": {...}}.
  close ID | select GROUP MEMBER | reload   [--control PATH]
        Close one flow (the app sees a reset), switch a select group, or
        read the profile again (as SIGHUP does; errors keep the old one).
  top [--interval S] [--count N] [--control PATH]
        status, flows and the last 5 finished requests and connections,
        redrawn every S seconds (default 1) until Ctrl-C.
        exec, run and proxy answer these on /run/sluice/control.sock when
        root (mode 0600), else on $XDG_RUNTIME_DIR/sluice/control.sock (or
        /tmp/sluice-UID/control.sock), the user's; --control PATH puts the
        socket elsewhere, --no-control goes without. docs/control.md
        describes the HTTP+JSON API.
  help [COMMAND]
        Show this text, or COMMAND's part of it (as COMMAND --help or -h;
        after exec's or dump's CMD, --help is CMD's).

run needs root, or CAP_NET_ADMIN and CAP_SYS_ADMIN, except to attach to a
user's own namespace; exec and dump run without them in a user namespace;
proxy needs neither. Every flow holds a
socket, so exec, run and proxy lift their soft open-files limit to the hard
one (exec's CMD keeps the limit it would have had); when even that runs out,
new flows are refused and Sluice says so.
"""

/// Prints to stderr.
func complain(_ text: String) {
    ProcessControl.writeStandardError(text + "\n")
}

func parseDump(_ arguments: ArraySlice<String>) -> PacketDump.Options? {
    var rest = arguments
    var options = PacketDump.Options(command: [])
    while let first = rest.first {
        switch first {
        case "--count", "--seconds", "--mtu":
            rest.removeFirst()
            guard let value = rest.first else {
                complain("sluice dump: \(first) needs a value")
                return nil
            }
            rest.removeFirst()
            switch first {
            case "--count":
                guard let n = Int(value), n > 0 else { complain("sluice dump: --count wants a positive whole number, got '\(value)'"); return nil }
                options.count = n
            case "--seconds":
                guard let s = Double(value), s > 0 else { complain("sluice dump: --seconds wants a positive number, got '\(value)'"); return nil }
                options.seconds = s
            default:
                guard let m = Int(value), (1280 ... 65535).contains(m) else { complain("sluice dump: --mtu wants 1280 to 65535, got '\(value)'"); return nil }
                options.mtu = m
            }
        case "--no-ping":
            rest.removeFirst()
            options.answerPings = false
        case "--":
            rest.removeFirst()
            options.command = Array(rest)
            rest = []
        default:
            if first.hasPrefix("-") {
                complain("sluice dump: unknown option '\(first)' (see sluice help)")
                return nil
            }
            options.command = Array(rest)
            rest = []
        }
    }
    guard !options.command.isEmpty else {
        complain("sluice dump: no command given; for example: sluice dump -- ping -c 2 10.233.0.2")
        return nil
    }
    return options
}

let captureOptions: Set<String> = ["--pcap", "--pcap-filter", "--snaplen", "--pcap-rotate-size", "--pcap-rotate-count", "--pcap-per-flow", "--flow-log", "--har", "--har-body-limit"]
let captureOptionHelp = [
    "--pcap": "a file to write", "--pcap-per-flow": "an existing folder", "--pcap-filter": "a BPF expression such as 'tcp port 80'",
    "--snaplen": "a byte count (at least 64)", "--pcap-rotate-size": "a byte count (at least 4096)",
    "--pcap-rotate-count": "a count of files (at least 1)", "--flow-log": "a file to write", "--har": "a file to write", "--har-body-limit": "a byte count",
]

func parseCapture(_ option: String, _ value: String, into capture: inout CaptureOptions) -> Bool {
    switch option {
    case "--pcap": capture.pcap = value
    case "--pcap-per-flow": capture.pcapPerFlow = value
    case "--flow-log": capture.flowLog = value
    case "--har": capture.har = value
    case "--har-body-limit":
        guard let n = Int(value), n >= 0 else { return false }
        capture.harBodyLimit = n
    case "--pcap-filter": capture.filter = value
    case "--snaplen":
        guard let n = Int(value), n >= 64 else { return false }
        capture.snaplen = n
    case "--pcap-rotate-size":
        guard let n = Int(value), n >= 4096 else { return false }
        capture.rotateSize = n
    case "--pcap-rotate-count":
        guard let n = Int(value), n >= 1 else { return false }
        capture.rotateCount = n
    default: return false
    }
    return true
}

var arguments = Array(CommandLine.arguments.dropFirst())
// -v and -q come before the command: `sluice -v exec -- CMD`.
while let first = arguments.first, ["-v", "--verbose", "-q", "--quiet"].contains(first) {
    arguments.removeFirst()
    EngineLog.level = first.hasPrefix("-v") || first == "--verbose" ? .verbose : .quiet
    EngineLog.setByCommandLine = true
}

/// Runs a command whose options parsed, or explains the usage error (exit 2).
func runParsed<Options, Failure: Error>(_ parsed: Result<Options, Failure>, _ run: (Options) -> Int32) -> Never {
    switch parsed {
    case let .failure(error):
        complain("\(error)")
        ProcessControl.exit(2)
    case let .success(options):
        ProcessControl.exit(run(options))
    }
}

/// The exit summary, unless -q.
func summarize(_ text: String) {
    if EngineLog.level >= .normal { complain(text) }
}
ProcessControl.lineBufferStandardOutput()
if let command = arguments.first, !command.hasPrefix("__") {
    // Before any thread, and not in the helpers that only start the command.
    CPUAcceleration.enable()
    switch OptionScreen.screen(command, arguments.dropFirst()) {
    case .proceed: break
    case .help:
        print(OptionScreen.section(of: usage, for: command) ?? usage)
        ProcessControl.exit(0)
    case let .refuse(message):
        complain(message)
        ProcessControl.exit(2)
    }
}
switch arguments.first {
case "__launch":
    // Internal: `sluice exec` (and `dump`) runs this to enter the command's namespace (--netns), give it
    // Sluice's resolv.conf (--resolv) and the open-files soft limit Sluice started with (--nofile).
    var rest = arguments.dropFirst()
    var resolv: String?
    var openFiles: UInt64?
    var netns: String?
    var caBundle: String?
    var keepRoot = false
    var gated = false
    while let option = rest.first, ["--netns", "--resolv", "--ca-bundle", "--nofile", "--keep-root", "--gated"].contains(option) {
        if option == "--keep-root" {
            // `exec --root`: the command stays root, whoever typed sudo.
            keepRoot = true
            rest = rest.dropFirst()
            continue
        }
        if option == "--gated" {
            // Descriptor 3: the command starts when Sluice's tunnel runs (`CommandGate`).
            gated = true
            rest = rest.dropFirst()
            continue
        }
        guard let value = rest.dropFirst().first else { ProcessControl.exit(127) }
        switch option {
        case "--netns": netns = value
        case "--resolv": resolv = value
        case "--ca-bundle": caBundle = value
        default: openFiles = UInt64(value)
        }
        rest = rest.dropFirst(2)
    }
    if rest.first == "--" { rest = rest.dropFirst() }
    guard !rest.isEmpty else { ProcessControl.exit(127) }
    // Started by Sluice's main thread (ExecCommand, PacketDump): it ends with Sluice.
    Launcher.exec(networkNamespace: netns, bindingResolvConf: resolv, caBundle: caBundle, openFilesSoftLimit: openFiles,
                  switchingToSudoUser: !keepRoot, endingWithSluice: true, gate: gated ? 3 : nil, command: Array(rest))
case "__userns":
    // Internal: `sluice exec` and `dump` without root start this to make the command's namespace in
    // a user namespace and hand back its TUN (descriptor 3 is the channel), then run the command.
    var rest = arguments.dropFirst()
    var mtu = 65520
    var resolv: String?
    var openFiles: UInt64?
    var join: String?
    var caBundle: String?
    var asRoot = false
    while let option = rest.first, ["--mtu", "--resolv", "--ca-bundle", "--nofile", "--join", "--root"].contains(option) {
        if option == "--root" {
            asRoot = true
            rest = rest.dropFirst()
            continue
        }
        guard let value = rest.dropFirst().first else { ProcessControl.exit(127) }
        switch option {
        case "--mtu": mtu = Int(value) ?? mtu
        case "--resolv": resolv = value
        case "--ca-bundle": caBundle = value
        case "--join": join = value
        default: openFiles = UInt64(value)
        }
        rest = rest.dropFirst(2)
    }
    // `sluice run --netns FILE` without root: join that namespace, hand back a TUN, end.
    if let join { UserNamespaceHelper.join(file: join, mtu: mtu) }
    if rest.first == "--" { rest = rest.dropFirst() }
    guard !rest.isEmpty else { ProcessControl.exit(127) }
    UserNamespaceHelper.run(mtu: mtu, resolv: resolv, caBundle: caBundle, openFilesSoftLimit: openFiles, asRoot: asRoot, command: Array(rest))
case nil, "help", "--help", "-h":
    if arguments.count > 1, arguments.first == "help" {
        guard let section = OptionScreen.section(of: usage, for: arguments[1]) else {
            complain("sluice help: no command '\(arguments[1])'; the commands: exec, run, dump, ca, check, match, proxy, replay, status, flows, requests, close, select, reload, top")
            ProcessControl.exit(2)
        }
        print(section)
        ProcessControl.exit(0)
    }
    print(usage)
case "exec":
    var rest = arguments.dropFirst()
    var options = ExecCommand.Options(command: [])
    while let first = rest.first, first.hasPrefix("-") {
        rest.removeFirst()
        if first == "--" { break }
        if first == "--mtu" {
            guard let value = rest.first, let mtu = Int(value), (1280 ... 65535).contains(mtu) else {
                complain("sluice exec: --mtu wants 1280 to 65535"); ProcessControl.exit(2)
            }
            rest.removeFirst()
            options.mtu = mtu
            continue
        }
        if first == "--busy-poll" {
            guard let micros = ExecCommand.parseBusyPoll(rest.first) else {
                complain("sluice exec: \(ExecCommand.busyPollHint)")
                ProcessControl.exit(2)
            }
            rest.removeFirst()
            options.busyPoll = micros
            continue
        }
        if first == "--faults", let value = rest.first {
            rest.removeFirst()
            options.faults = value
            continue
        }
        if first == "--root" {
            options.commandAsRoot = true
            continue
        }
        if first == "--host-loopback" {
            options.hostLoopback = true
            continue
        }
        if first == "--forward", rest.first == "auto" {
            rest.removeFirst()
            options.autoForward = true
            continue
        }
        if first == "--forward" {
            guard let value = rest.first, let forward = PortForward.parse(value) else {
                complain("sluice exec: --forward wants [ADDRESS:]PORT:APP-PORT[/udp] or auto, such as 8080:80, 0.0.0.0:8080:80 or 5353:53/udp")
                ProcessControl.exit(2)
            }
            rest.removeFirst()
            options.forwards.append(forward)
            continue
        }
        if first == "--profile", let value = rest.first {
            rest.removeFirst()
            options.profile = value
            continue
        }
        if first == "--ca-dir", let value = rest.first {
            rest.removeFirst()
            options.caDirectory = value
            continue
        }
        if first == "--control", let value = rest.first {
            rest.removeFirst()
            options.control = .path(value)
            continue
        }
        if first == "--no-control" {
            options.control = .off
            continue
        }
        if captureOptions.contains(first) {
            guard let value = rest.first, parseCapture(first, value, into: &options.capture) else {
                complain("sluice exec: \(first) needs \(captureOptionHelp[first] ?? "a value")")
                ProcessControl.exit(2)
            }
            rest.removeFirst()
            continue
        }
        if first == "--dns" {
            guard let value = rest.first, let choice = ExecCommand.DNSChoice(rawValue: value) else {
                complain("sluice exec: --dns wants fake, forward or off"); ProcessControl.exit(2)
            }
            rest.removeFirst()
            options.dns = choice
            continue
        }
        if first == "--fault-seed" {
            guard let value = rest.first, let seed = UInt64(value) else {
                complain("sluice exec: --fault-seed wants a number (the same number replays the same faults)"); ProcessControl.exit(2)
            }
            rest.removeFirst()
            options.faultSeed = seed
            continue
        }
        complain("sluice exec: unknown or incomplete option '\(first)' (see sluice help)")
        ProcessControl.exit(2)
    }
    options.command = Array(rest)
    guard !options.command.isEmpty else {
        complain("sluice exec: no command given; for example: sluice exec -- curl http://example.test/")
        ProcessControl.exit(2)
    }
    do {
        let (status, statistics) = try ExecCommand(options: options).run { complain($0) }
        summarize("sluice: \(statistics)")
        ProcessControl.exit(status)
    } catch let error as EngineError {
        complain(error.isReport ? error.description : "sluice: error: \(error)")
        ProcessControl.exit(error.isUsage ? 2 : 1)
    } catch {
        complain("sluice: error: \(error)")
        ProcessControl.exit(1)
    }
case "run":
    var rest = arguments.dropFirst()
    var options = RunCommand.Options(namespace: "")
    // Which namespace: one of --netns, --pid and --tun, never two (the last one silently won, and
    // with --tun a mistyped --netns took over the host's own namespace instead).
    var targets: [String] = []
    while let first = rest.first {
        rest.removeFirst()
        switch first {
        case "--netns":
            guard let name = rest.first else { complain("sluice run: --netns needs a namespace name or file"); ProcessControl.exit(2) }
            rest.removeFirst()
            options.namespace = name
            targets.append("--netns \(name)")
        case "--pid":
            guard let value = rest.first, let pid = Int32(value), pid > 0 else {
                complain("sluice run: --pid needs a process id (its network namespace is attached to)"); ProcessControl.exit(2)
            }
            rest.removeFirst()
            options.namespace = "/proc/\(pid)/ns/net"
            targets.append("--pid \(pid)")
        case "--dns":
            guard let value = rest.first, let choice = ExecCommand.DNSChoice(rawValue: value) else {
                complain("sluice run: --dns wants fake, forward or off"); ProcessControl.exit(2)
            }
            rest.removeFirst()
            options.dns = choice
        case "--mtu":
            guard let value = rest.first, let mtu = Int(value), (1280 ... 65535).contains(mtu) else {
                complain("sluice run: --mtu wants 1280 to 65535"); ProcessControl.exit(2)
            }
            rest.removeFirst()
            options.mtu = mtu
        case "--busy-poll":
            guard let micros = ExecCommand.parseBusyPoll(rest.first) else {
                complain("sluice run: \(ExecCommand.busyPollHint)"); ProcessControl.exit(2)
            }
            rest.removeFirst()
            options.busyPoll = micros
        case "--tun":
            options.wholeHost = true
            targets.append("--tun")
        case "--exclude":
            switch ExcludedPrefix.parse(rest.first ?? "") {
            case let .success(prefix): options.excluded.append(prefix)
            case let .failure(error): complain(error.description); ProcessControl.exit(2)
            }
            rest.removeFirst()
        case "--forward":
            if rest.first == "auto" {
                rest.removeFirst()
                options.autoForward = true
                continue
            }
            guard let value = rest.first, let forward = PortForward.parse(value) else {
                complain("sluice run: --forward wants [ADDRESS:]PORT:APP-PORT[/udp] or auto, such as 8080:80, 0.0.0.0:8080:80 or 5353:53/udp"); ProcessControl.exit(2)
            }
            rest.removeFirst()
            options.forwards.append(forward)
        case "--profile":
            guard let path = rest.first else { complain("sluice run: --profile needs a file"); ProcessControl.exit(2) }
            rest.removeFirst()
            options.profile = path
        case "--ca-dir":
            guard let path = rest.first else { complain("sluice run: --ca-dir needs a folder"); ProcessControl.exit(2) }
            rest.removeFirst()
            options.caDirectory = path
        case "--control":
            guard let path = rest.first else { complain("sluice run: --control needs the socket's path"); ProcessControl.exit(2) }
            rest.removeFirst()
            options.control = .path(path)
        case "--no-control":
            options.control = .off
        case let option where captureOptions.contains(option):
            guard let value = rest.first, parseCapture(option, value, into: &options.capture) else {
                complain("sluice run: \(option) needs \(captureOptionHelp[option] ?? "a value")")
                ProcessControl.exit(2)
            }
            rest.removeFirst()
        default:
            complain("sluice run: unknown option '\(first)' (see sluice help)")
            ProcessControl.exit(2)
        }
    }
    guard !options.namespace.isEmpty || options.wholeHost else {
        complain("sluice run: which namespace? for example: sluice run --netns app (see `ip netns list`), --pid PID, or --tun for this host")
        ProcessControl.exit(2)
    }
    guard targets.count == 1 else {
        complain("sluice run: \(targets.joined(separator: " and ")): give one of --netns, --pid (another namespace) or --tun (this host's own)")
        ProcessControl.exit(2)
    }
    guard options.excluded.isEmpty || options.wholeHost else {
        complain("sluice run: --exclude is for --tun (whole-host mode): with --netns, only the namespace's own routes go to Sluice")
        ProcessControl.exit(2)
    }
    guard options.forwards.isEmpty && !options.autoForward || !options.wholeHost else {
        complain("sluice run: --forward reaches servers in a namespace Sluice attaches to (--netns); with --tun they are this host's own")
        ProcessControl.exit(2)
    }
    do {
        let (_, statistics) = try RunCommand(options: options).run { complain($0) }
        summarize("sluice: \(statistics)")
        ProcessControl.exit(0)
    } catch let error as EngineError {
        complain(error.isReport ? error.description : "sluice: error: \(error)")
        ProcessControl.exit(error.isUsage ? 2 : 1)
    } catch {
        complain("sluice: error: \(error)")
        ProcessControl.exit(1)
    }
case "dump":
    guard let options = parseDump(arguments.dropFirst()) else { ProcessControl.exit(2) }
    do {
        let (status, summary) = try PacketDump(options: options).run { line in print(line) }
        summarize("sluice: \(summary)")
        ProcessControl.exit(status)
    } catch {
        complain("sluice: error: \(error)")
        ProcessControl.exit(1)
    }
case "ca":
    runParsed(CACommand.parse(arguments.dropFirst())) { CACommand(options: $0).run(print: { print($0) }, complain: complain) }
case "check":
    runParsed(CheckCommand.parse(arguments.dropFirst())) { CheckCommand(options: $0).run(output: { print($0) }, diagnostics: complain) }
case "match":
    runParsed(MatchCommand.parse(arguments.dropFirst())) { MatchCommand(options: $0).run(print: { print($0) }, complain: complain) }
case "status", "flows", "requests", "close", "select", "reload", "top":
    runParsed(ControlCommand.parse(arguments[...])) { ControlCommand(options: $0).run(print: { print($0) }, complain: complain) }
case "proxy":
    switch ProxyCommand.parse(arguments.dropFirst()) {
    case let .failure(error):
        complain("\(error)")
        ProcessControl.exit(2)
    case let .success(options):
        do {
            let statistics = try ProxyCommand(options: options).run { complain($0) }
            summarize("sluice: \(statistics)")
            ProcessControl.exit(0)
        } catch let error as EngineError {
            complain(error.isReport ? error.description : "sluice: error: \(error)")
            ProcessControl.exit(error.isUsage ? 2 : 1)
        } catch {
            complain("sluice: error: \(error)")
            ProcessControl.exit(1)
        }
    }
case "replay":
    switch ReplayCommand.parse(arguments.dropFirst()) {
    case let .failure(error):
        complain("\(error)")
        ProcessControl.exit(2)
    case let .success(options):
        ProcessControl.exit(ReplayCommand(options: options).run(print: { print($0) }, complain: complain))
    }
default:
    complain("sluice: unknown command '\(arguments[0])'\n\n\(usage)")
    ProcessControl.exit(2)
}
