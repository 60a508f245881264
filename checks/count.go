package checks

import (
	"bytes"
	"strconv"

	"github.com/ralph-harness/ralph/internal/lazyre"
	"github.com/ralph-harness/ralph/internal/lines"
)

// maxCountLine bounds a line held for counting; longer ones are passed over.
const maxCountLine = 64 << 10

var (
	// One line per test, as go test -v and go test -json print them.
	goTestRE = lazyre.New(`^\s*--- (PASS|FAIL|SKIP): |"Action":"(pass|fail|skip)".*"Test":|"Test":.*"Action":"(pass|fail|skip)"`)
	// A runner's closing summary: pytest "3 passed, 1 failed", cargo
	// "test result: ok. 3 passed; 1 failed; 0 ignored", jest and vitest
	// "Tests:  3 passed, 4 total" or "Tests  3 passed (3)".
	summaryRE = lazyre.New(`(?i)\b(\d+) (passed|failed|skipped|ignored|errors?|xfailed|xpassed)\b`)
	totalRE   = lazyre.New(`(?i)^\s*tests:?\s.*?\b(\d+) total\b`)
	// vitest's "      Tests  1 failed | 2 passed (3)": the total in brackets.
	vitestRE = lazyre.New(`(?i)^\s*tests\s+.*\b(?:passed|failed|skipped)\b.*\((\d+)\)\s*$`)
	// pytest -q's summary, without its frame of "=": "1 failed, 2 passed
	// in 0.12s".
	quietRE = lazyre.New(`^\d+ (?:passed|failed|skipped|errors?|xfailed|xpassed)\b.* in \d+(?:\.\d+)?s$`)
)

// testCounter counts the tests a check's output reports, line by line as
// the output streams past: per-test lines (Go) or the runner's summary
// (pytest, cargo, jest, vitest). Memory is bounded by maxCountLine. It is written
// from one goroutine (a check's stdout and stderr share one pipe) and read
// once the check is over.
type testCounter struct {
	lines   lines.Splitter // longer lines are passed over
	perTest int
	summary int // the last summary's total; -1 when none was seen
	cargo   int // the sum of cargo's summaries, one per test binary
}

func newTestCounter() *testCounter {
	c := &testCounter{summary: -1}
	c.lines = lines.Splitter{Max: maxCountLine, Line: c.line}
	return c
}

func (c *testCounter) Write(p []byte) (int, error) { return c.lines.Write(p) }

// line counts what one line of output says. Each pattern is tried only on
// a line that has the text it needs: most lines of a check's output are
// none of these, and the patterns cost microseconds a line.
func (c *testCounter) line(line []byte) {
	if (bytes.Contains(line, []byte("--- ")) || bytes.Contains(line, []byte(`"Action":"`))) && goTestRE().Match(line) {
		c.perTest++
		return
	}
	t := bytes.TrimSpace(line)
	if len(t) >= 5 && bytes.EqualFold(t[:5], []byte("tests")) {
		if m := totalRE().FindSubmatch(line); m != nil {
			c.summary, _ = strconv.Atoi(string(m[1]))
			return
		}
		if m := vitestRE().FindSubmatch(line); m != nil {
			c.summary, _ = strconv.Atoi(string(m[1]))
			return
		}
	}
	if !looksLikeSummary(t) {
		return
	}
	if ms := summaryRE().FindAllSubmatch(line, -1); len(ms) > 0 {
		total := 0
		for _, m := range ms {
			n, _ := strconv.Atoi(string(m[1]))
			total += n
		}
		if bytes.HasPrefix(t, []byte("test result:")) {
			// cargo prints a summary per test binary: they add up.
			c.cargo += total
			total = c.cargo
		}
		c.summary = total
	}
}

// looksLikeSummary tells a runner's summary line, trimmed, from any line
// that says "2 passed": pytest's is framed by "=" (or, with -q, begins with
// a count and ends with its time), cargo's starts "test result:".
func looksLikeSummary(t []byte) bool {
	return bytes.HasPrefix(t, []byte("=")) || bytes.HasPrefix(t, []byte("test result:")) ||
		len(t) > 0 && '0' <= t[0] && t[0] <= '9' && quietRE().Match(t)
}

// count returns how many tests the output reported, or -1 when it did not
// look like a test runner's.
func (c *testCounter) count() int {
	c.lines.Flush()
	switch {
	case c.summary >= 0:
		return c.summary
	case c.perTest > 0:
		return c.perTest
	}
	return -1
}
