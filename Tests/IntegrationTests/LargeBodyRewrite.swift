import Foundation
import Testing

/// What the tests of [Body Rewrite] off the loop share (the tunnel's and
/// `sluice proxy`'s): a 2.6 MB text, eight regex pairs over it (a good part
/// of a second on these machines), and a client that downloads it while it
/// times small requests beside it.
enum LargeBodyRewrite {
    /// 100,000 lines "line N: value=N;".
    static let text = (0 ..< 100_000).map { "line \($0): value=\($0);\n" }.joined()
    /// Its length once the pairs have run: each line gains "x8".
    static var rewrittenCount: Int { text.utf8.count + 100_000 * 2 }

    /// The [Body Rewrite] line for nginx's `large.txt`: value=N; becomes value=Nx1;, then x2, ... x8.
    static let line = "http-response ^http://origin\\.test:8080/large\\.txt"
        + (0 ..< 8).map { " \"value=([0-9]+)\($0 == 0 ? "" : "x\($0)");\" \"value=$1x\($0 + 1);\"" }.joined()

    /// A shell script: `curl` (with its proxy option, if any) fetches
    /// large.txt into `out` in the background, and hello.txt again and again
    /// until it is done (bounded: 400); prints the large one's time and the
    /// slowest other's, then the first and last lines and the size of what came.
    static func script(curl: String, out: String, time: String) -> String {
        """
        \(curl) -o \(out) -w '%{time_total}\\n' http://origin.test:8080/large.txt > \(time) &
        big=$!
        slowest=0
        for i in $(seq 1 400); do
          kill -0 $big 2>/dev/null || break
          t=$(\(curl) -o /dev/null -w '%{time_total}' http://origin.test:8080/hello.txt)
          slowest=$(echo "$t $slowest" | awk '{ print ($1 > $2) ? $1 : $2 }')
        done
        wait $big
        echo "$(cat \(time)) $slowest"
        sed -n '1p;100000p' \(out)
        wc -c < \(out)
        """
    }

    /// `script`'s output: the rewritten text came whole, and no other
    /// request waited for the rewrite (on the loop, the slowest would have
    /// waited for nearly all of it).
    static func check(_ output: String, context: String) {
        let lines = output.split(separator: "\n").map(String.init)
        let times = lines.first.map { $0.split(separator: " ").compactMap { Double($0) } } ?? []
        #expect(times.count == 2, "\(output)\n\(context)")
        if times.count == 2 {
            #expect(times[1] < times[0] / 3, "large \(times[0]) s, slowest other \(times[1]) s")
        }
        #expect(Array(lines.dropFirst()) == ["line 0: value=0x8;", "line 99999: value=99999x8;", "\(rewrittenCount)"],
                "\(output)\n\(context)")
    }
}
