import Engine
import Testing

@Suite struct OptionScreenTests {
    func screen(_ line: String) -> OptionScreen.Verdict {
        let words = line.split(separator: " ").map(String.init)
        return OptionScreen.screen(words[0], words.dropFirst())
    }

    @Test func aDroppedValueIsNotTakenFromTheNextOption() {
        #expect(screen("exec --pcap --no-control -- true")
            == .refuse("sluice exec: --pcap needs a value, but the next word is the option --no-control (see sluice exec --help)"))
        #expect(screen("exec --flow-log --pcap x.pcap -- true")
            == .refuse("sluice exec: --flow-log needs a value, but the next word is the option --pcap (see sluice exec --help)"))
        #expect(screen("proxy --har") == .refuse("sluice proxy: --har needs a value (see sluice proxy --help)"))
        #expect(screen("run --netns --tun") == .refuse("sluice run: --netns needs a value, but the next word is the option --tun (see sluice run --help)"))
        #expect(screen("exec --pcap a.pcap --profile p.conf -- curl --pcap") == .proceed)
        #expect(screen("exec --forward auto --dns off -- true") == .proceed)
        #expect(screen("match p.conf http://a.test/ --header X-A:1") == .proceed)
    }

    @Test func helpIsSluicesUntilTheCommandBegins() {
        #expect(screen("exec --help") == .help)
        #expect(screen("exec --profile p.conf -h") == .help)
        #expect(screen("proxy --listen 127.0.0.1:1080 --help") == .help)
        #expect(screen("reload -h") == .help)
        // CMD's own --help is CMD's, with -- or without.
        #expect(screen("exec -- curl --help") == .proceed)
        #expect(screen("exec curl --help") == .proceed)
        #expect(screen("exec --mtu 1500 curl -h") == .proceed)
        #expect(screen("dump ping -h") == .proceed)
    }

    @Test func contradictionsAndOrphansAreRefused() {
        #expect(screen("exec --control /tmp/c.sock --no-control -- true")
            == .refuse("sluice exec: --control and --no-control contradict each other; give one"))
        #expect(screen("run --no-control --netns app --control x") == .refuse("sluice run: --control and --no-control contradict each other; give one"))
        #expect(screen("exec --fault-seed 7 -- true")
            == .refuse("sluice exec: --fault-seed seeds --faults, which is not given; for example --faults drop=0.02 --fault-seed 7"))
        #expect(screen("exec --fault-seed 7 --faults drop=0.1 -- true") == .proceed)
        // CMD's words are CMD's.
        #expect(screen("exec --no-control -- app --control x") == .proceed)
    }

    @Test func verbosityGoesBeforeTheCommand() {
        #expect(screen("exec -v -- true") == .refuse("sluice exec: -v goes before the command: sluice -v exec …"))
        #expect(screen("exec -- sh -v") == .proceed)
    }

    @Test func sectionsAreTheCommandsEntries() {
        let usage = """
        usage: sluice COMMAND

        commands:
          exec [--profile FILE]
               [--ca-dir DIR] [--] CMD
                Run CMD.
                  --pcap FILE
          run --netns NAME
                Attach.
          run --tun
                Whole host.
          close ID | select GROUP MEMBER | reload   [--control PATH]
                Close one flow.
          help  Show this text.

        run needs root.
        """
        #expect(OptionScreen.section(of: usage, for: "exec")
            == "usage: sluice [-v | -q] COMMAND [OPTIONS]\n\n  exec [--profile FILE]\n       [--ca-dir DIR] [--] CMD\n        Run CMD.\n          --pcap FILE")
        #expect(OptionScreen.section(of: usage, for: "run")
            == "usage: sluice [-v | -q] COMMAND [OPTIONS]\n\n  run --netns NAME\n        Attach.\n  run --tun\n        Whole host.")
        #expect(OptionScreen.section(of: usage, for: "select")
            == "usage: sluice [-v | -q] COMMAND [OPTIONS]\n\n  close ID | select GROUP MEMBER | reload   [--control PATH]\n        Close one flow.")
        #expect(OptionScreen.section(of: usage, for: "bogus") == nil)
        #expect(OptionScreen.section(of: usage, for: "CMD") == nil)
    }
}
