package checks

import (
	"bytes"
	"strconv"

	"github.com/ralph-harness/ralph/internal/ansi"
	"github.com/ralph-harness/ralph/internal/lazyre"
	"github.com/ralph-harness/ralph/internal/lines"
)

// maxCountLine bounds a line held for counting; longer ones are passed over.
const maxCountLine = 64 << 10

// What counts is the tests that ran, passed or failed: a skipped test did
// not, and counting it would let an agent turn a failing test into a
// skipped one (t.Skip, @pytest.mark.skip, #[ignore], it.skip) and keep its
// count. Per runner, a test ran when
//   - go test -v or -json says PASS or FAIL (pass, fail) of it; SKIP (skip)
//     is t.Skip's, or -short's;
//   - pytest says it passed or failed, xfailed or xpassed (an expected
//     failure is run, as any test is), or errored (in its setup or
//     teardown, or a file that would not load); skipped and deselected
//     ones did not run;
//   - cargo says it passed or failed; ignored (#[ignore]) and filtered out
//     ones did not run, and measured ones are benchmarks;
//   - jest or vitest says it passed or failed; skipped (it.skip, xit, a
//     test left out by .only) and todo ones did not run, though the
//     summary's total counts them.
var (
	// A runner's closing summary: pytest "3 passed, 1 failed", cargo
	// "test result: ok. 3 passed; 1 failed; 0 ignored", jest and vitest
	// "Tests:  3 passed, 4 total" or "Tests  3 passed (3)". The kinds that
	// did not run are matched too, to tell a summary that ran no test.
	summaryRE = lazyre.New(`(?i)\b(\d+) (passed|failed|skipped|ignored|errors?|xfailed|xpassed)\b`)
	// jest's "Tests:       1 failed, 1 skipped, 2 passed, 4 total".
	jestRE = lazyre.New(`(?i)^\s*tests:?\s.*?\b\d+ total\b`)
	// vitest's "      Tests  1 failed | 2 passed | 1 skipped (4)".
	vitestRE = lazyre.New(`(?i)^\s*tests\s+.*\b(?:passed|failed|skipped|todo)\b.*\(\d+\)\s*$`)
	// pytest -q's summary, without its frame of "=": "1 failed, 2 passed
	// in 0.12s".
	quietRE = lazyre.New(`^\d+ (?:passed|failed|skipped|errors?|xfailed|xpassed)\b.* in \d+(?:\.\d+)?s$`)
)

// testCounter counts the tests that ran in a check's output, line by line
// as the output streams past: per-test lines (Go) or the runner's summary
// (pytest, cargo, jest, vitest). Memory is bounded by maxCountLine. It is written
// from one goroutine (a check's stdout and stderr share one pipe) and read
// once the check is over.
type testCounter struct {
	lines   lines.Splitter // longer lines are passed over
	plain   []byte         // a coloured line without its colours
	perTest int            // tests Go's per-test lines say ran; -1 when none was seen
	summary int            // what the last summary says ran; -1 when none was seen
	cargo   int            // the sum of cargo's summaries, one per test binary
}

func newTestCounter() *testCounter {
	c := &testCounter{perTest: -1, summary: -1}
	c.lines = lines.Splitter{Max: maxCountLine, Line: c.line}
	return c
}

func (c *testCounter) Write(p []byte) (int, error) { return c.lines.Write(p) }

// line counts what one line of output says. Go's per-test lines are told
// by their bytes, and each pattern is tried only on a line that has the
// text it needs: most lines of a check's output are none of these, and the
// patterns cost microseconds a line.
func (c *testCounter) line(line []byte) {
	// Runners colour their summaries when told to, into a pipe too
	// (FORCE_COLOR in a CI job's environment, --color in a runner's
	// settings, which the agent may edit): the count is in the text
	// between the colours, and without it the ratchet would be off.
	if bytes.IndexByte(line, 0x1b) >= 0 {
		c.plain = ansi.Append(c.plain[:0], line)
		line = c.plain
	}
	switch string(goVerdict(line)) {
	case "PASS", "FAIL", "pass", "fail":
		c.perTest = max(c.perTest, 0) + 1
		return
	case "SKIP", "skip":
		c.perTest = max(c.perTest, 0)
		return
	}
	t := bytes.TrimSpace(line)
	if len(t) >= 5 && bytes.EqualFold(t[:5], []byte("tests")) && (jestRE().Match(line) || vitestRE().Match(line)) {
		c.summary, _ = ran(line)
		return
	}
	if !looksLikeSummary(t) {
		return
	}
	n, ok := ran(line)
	if !ok {
		return
	}
	if bytes.HasPrefix(t, []byte("test result:")) {
		// cargo prints a summary per test binary: they add up.
		c.cargo += n
		n = c.cargo
	}
	c.summary = n
}

// goVerdict returns what a line of go test -v says became of a test
// ("PASS", "FAIL" or "SKIP"), or the action of a line of go test -json
// about one test when it has four letters ("pass", "fail", "skip", or
// "cont", which is none), or nil. It compares bytes, with no pattern:
// every line of -json's output has an action, most of them "output".
func goVerdict(line []byte) []byte {
	// go test -v: "--- PASS: TestA (0.00s)", indented for a subtest.
	if t := bytes.TrimLeft(line, " \t"); len(t) >= 10 && bytes.HasPrefix(t, []byte("--- ")) && bytes.HasPrefix(t[8:], []byte(": ")) {
		return t[4:8]
	}
	// go test -json: {"Time":"…","Action":"pass","Package":"…","Test":"TestA",…};
	// a package's own verdict names no test.
	if _, rest, ok := bytes.Cut(line, []byte(`"Action":"`)); ok && len(rest) > 4 && rest[4] == '"' && bytes.Contains(line, []byte(`"Test":`)) {
		return rest[:4]
	}
	return nil
}

// ran adds up the counts of a summary line's tests that ran (see above);
// ok is false when the line has no count of tests at all.
func ran(line []byte) (n int, ok bool) {
	for _, m := range summaryRE().FindAllSubmatch(line, -1) {
		ok = true
		if bytes.EqualFold(m[2], []byte("skipped")) || bytes.EqualFold(m[2], []byte("ignored")) {
			continue
		}
		k, _ := strconv.Atoi(string(m[1]))
		n += k
	}
	return n, ok
}

// looksLikeSummary tells a runner's summary line, trimmed, from any line
// that says "2 passed": pytest's is framed by "=" (or, with -q, begins with
// a count and ends with its time), cargo's starts "test result:".
func looksLikeSummary(t []byte) bool {
	return bytes.HasPrefix(t, []byte("=")) || bytes.HasPrefix(t, []byte("test result:")) ||
		len(t) > 0 && '0' <= t[0] && t[0] <= '9' && quietRE().Match(t)
}

// count returns how many tests the output reported ran, or -1 when it did
// not look like a test runner's.
func (c *testCounter) count() int {
	c.lines.Flush()
	if c.summary >= 0 {
		return c.summary
	}
	return c.perTest
}
