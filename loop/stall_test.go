package loop

import (
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/checks"
	"github.com/ralph-harness/ralph/progress"
)

func TestFingerprint(t *testing.T) {
	entry := func(out, claim string) progress.Entry {
		return progress.Entry{Claim: claim, Checks: []progress.Check{
			{Name: "ok", Passed: true},
			{Name: "test", Excerpt: out},
		}}
	}
	a := fingerprint(entry("--- FAIL: TestX (0.12s)\nx_test.go:12: want 3, got 4\nok\n", ""), nil, nil)
	// Times, line numbers and temporary paths differ between runs of the
	// same failure: the fingerprint does not.
	b := fingerprint(entry("--- FAIL: TestX (0.98s)\nx_test.go:13: want 3, got 4\nok\n", ""), nil, nil)
	if a != b {
		t.Errorf("the same failure gave two fingerprints: %s, %s", a, b)
	}
	for name, other := range map[string]string{
		"another failure": fingerprint(entry("--- FAIL: TestY (0.12s)\n", ""), nil, nil),
		"a change":        fingerprint(entry("--- FAIL: TestX (0.12s)\nx_test.go:12: want 3, got 4\n", ""), nil, []string{"x.go"}),
		"a claim":         fingerprint(entry("--- FAIL: TestX (0.12s)\nx_test.go:12: want 3, got 4\n", "done"), nil, nil),
	} {
		if other == a {
			t.Errorf("%s did not change the fingerprint", name)
		}
	}
	// An agent that works through a story a file at a time changes other
	// files each time; one going round in circles, the same ones.
	c := fingerprint(entry("--- FAIL: TestX (0.12s)\n", ""), nil, []string{"main.go", "step1.go"})
	if c != fingerprint(entry("--- FAIL: TestX (0.34s)\n", ""), nil, []string{"main.go", "step1.go"}) {
		t.Error("the same files changed again gave another fingerprint")
	}
	if c == fingerprint(entry("--- FAIL: TestX (0.12s)\n", ""), nil, []string{"main.go", "step2.go"}) {
		t.Error("other files changed gave the same fingerprint")
	}
	// With more failures than the entry's excerpt keeps, fixing the first
	// of them changes the fingerprint: the whole kept output is counted.
	var all strings.Builder
	for i := range 60 {
		fmt.Fprintf(&all, "--- FAIL: Test%c%c\n", 'a'+i/26, 'a'+i%26)
	}
	many := all.String()
	fewer := many[strings.Index(many, "\n")+1:]
	e := entry(checks.Excerpt(many, excerptLines), "")
	ef := entry(checks.Excerpt(fewer, excerptLines), "")
	if fingerprint(e, map[string]output{"test": {text: many}}, []string{"x.go"}) == fingerprint(ef, map[string]output{"test": {text: fewer}}, []string{"x.go"}) {
		t.Error("one failure of 60 fixed did not change the fingerprint")
	}
}

// TestFingerprintCut: of an output longer than ralph keeps, the end is
// read, which begins anywhere: the same failures with a few bytes more or
// less give the same fingerprint; another last failure, or one failure
// fewer anywhere, does not.
func TestFingerprintCut(t *testing.T) {
	e := progress.Entry{Checks: []progress.Check{{Name: "test"}}}
	tail := func(first, pad int, last string) map[string]output {
		var b strings.Builder
		for i := first; i < 400; i++ {
			fmt.Fprintf(&b, "--- FAIL: TestThing%d\n", i)
		}
		b.WriteString(strings.Repeat("x", pad) + "\n" + last + "\n")
		out := b.String()
		return map[string]output{"test": {text: out[len(out)-checks.DefaultTailBytes:], cut: true, lines: strings.Count(out, "\n")}}
	}
	a := fingerprint(e, tail(0, 0, "FAIL pkg"), nil)
	for pad := 1; pad < 13; pad++ {
		if b := fingerprint(e, tail(0, pad, "FAIL pkg"), nil); b != a {
			t.Errorf("%d bytes more of the same output changed the fingerprint: %s, %s", pad, a, b)
		}
	}
	if fingerprint(e, tail(0, 0, "FAIL other"), nil) == a {
		t.Error("another last failure did not change the fingerprint")
	}
	if fingerprint(e, tail(1, 0, "FAIL pkg"), nil) == a {
		t.Error("the first failure fixed, far from the end, did not change the fingerprint")
	}
}

// TestFailureLines: the lines that say what failed are picked, in the
// usual languages' words, and a line that only mentions such a word in
// passing is not.
func TestFailureLines(t *testing.T) {
	for _, line := range []string{
		"--- FAIL: TestX (0.12s)",
		"x_test.go:42: got 3, want 4",
		"AssertionError: assert 3 == 4",
		"TypeError: x is not a function",
		"ReferenceError: foo is not defined",
		"ModuleNotFoundError: No module named 'foo'",
		"panic: runtime error: index out of range",
		"error[E0308]: mismatched types",
		"FAILED tests/test_x.py::test_y - assert 1 == 2",
	} {
		if got := failureLines("ok\n" + line + "\nok\n"); len(got) != 1 {
			t.Errorf("failureLines of %q = %q, want the line", line, got)
		}
	}
	for _, line := range []string{"reading stderr", "failover to the replica", "ok  example.com/x 0.01s"} {
		if got := failureLines("--- FAIL: TestX\n" + line); len(got) != 1 {
			t.Errorf("failureLines picked %q: %q", line, got)
		}
	}
}

// known is knownFailure of a check whose whole output was out, read as the
// loop reads it.
func known(baseline []progress.Check, name, out string) bool {
	return knownFailure(baseline, name, collect(out, 1), ending(checks.Result{ExitCode: 1}))
}

// collect runs out through a failureCollector in writes of chunk bytes.
func collect(out string, chunk int) []string {
	c := newFailureCollector(func(s string) string { return s })
	for p := []byte(out); len(p) > 0; {
		n := min(chunk, len(p))
		c.Write(p[:n])
		p = p[n:]
	}
	return c.failures(out)
}

// TestFailureCollector: what the collector reads of a whole output, in
// writes of any size, is what distinctFailures reads of the same output
// kept whole; a line too long to hold is passed over, and reading stops
// at maxBaselineLines distinct lines.
func TestFailureCollector(t *testing.T) {
	outputs := []string{
		"--- FAIL: TestA (0.01s)\n    a_test.go:3: want 1, got 2\nFAIL\nok  example.com/b 0.1s\n",
		"no newline at the end: error",
		"\x1b[31mERROR\x1b[0m in 0x1f3a\r\nPanic: boom\nerror\nerror\n",
		"nothing failed here\nbut the last lines\n\n",                       // no failure line: the last lines
		"Traceback:\n  AssertionError: 3 != 4\nTypeError: x is undefined\n", // words of every kind
		"u\u017fed \u017fomething: \u212aABOOM\nerrors: 2\n",                // bytes past ASCII go to the pattern
		"",
	}
	for _, out := range outputs {
		want := distinctFailures(out)
		for _, chunk := range []int{1, 3, 64, len(out) + 1} {
			if got := collect(out, chunk); !slices.Equal(got, want) {
				t.Errorf("collect(%q) in writes of %d = %q, want %q", out, chunk, got, want)
			}
		}
	}
	long := "error: " + strings.Repeat("x", maxFailureLine) + "\n--- FAIL: TestShort\n"
	if got := collect(long, 4096); !slices.Equal(got, []string{"--- FAIL: TestShort"}) {
		t.Errorf("collect of a line too long to hold = %q, want only the short one", got)
	}
	var many strings.Builder
	for i := range maxBaselineLines + 5 {
		fmt.Fprintf(&many, "--- FAIL: Test%c%c\n", 'a'+i/26, 'a'+i%26)
	}
	if got := collect(many.String(), 100); len(got) != maxBaselineLines || got[0] != "--- FAIL: Testaa" {
		t.Errorf("collect of %d distinct lines kept %d, first %q; want the first %d", maxBaselineLines+5, len(got), got[0], maxBaselineLines)
	}
}

// TestFailureCollectorLongLines: of failure lines tens of KiB long, the
// collector holds a few MiB at most, however many there are, and each line
// it keeps is short: the start of the line is what says what failed. The
// same failures read again, with other numbers (which move where a long
// line is cut), are known; another case is not.
func TestFailureCollectorLongLines(t *testing.T) {
	pad := strings.Repeat("x", 60<<10-100)
	run := func(first, cases, ms int) *failureCollector {
		c := newFailureCollector(func(s string) string { return s })
		for i := first; i < first+cases; i++ {
			fmt.Fprintf(c, "--- FAIL: TestBig/case_%d (0.%ds) %s\n", i, ms+i, pad)
		}
		return c
	}
	c := run(0, 600, 5)
	got := c.failures("")
	held := 0
	for _, l := range got {
		held += len(l)
		if len(l) > 1<<10 {
			t.Errorf("a kept line of %d bytes, want at most 1 KiB: %.60q…", len(l), l)
			break
		}
	}
	for l := range c.read {
		held += len(l)
	}
	if held > 2<<20 {
		t.Errorf("the collector holds %d bytes of lines, want at most 2 MiB", held)
	}
	if len(got) != maxBaselineLines {
		t.Fatalf("%d distinct failure lines kept, want %d", len(got), maxBaselineLines)
	}
	failed := ending(checks.Result{ExitCode: 1})
	baseline := []progress.Check{{Name: "unit", Excerpt: strings.Join(append(got, failed), "\n")}}
	if again := run(0, 600, 1000).failures(""); !knownFailure(baseline, "unit", again, failed) {
		t.Errorf("the same long failure lines with other durations are not known: %.80q", again[0])
	}
	if other := run(0, 1, 5).failures(""); knownFailure(baseline, "unit", append(other, run(9999, 1, 5).failures("")...), failed) {
		t.Error("a new case of long failure lines is taken for known")
	}
}

// TestKnownFailureLongLines: a long failure line, kept cut, knows the same
// failure when read back from the ledger, and so does a baseline kept
// whole before lines were cut; another test does not. A line that says
// what failed only past the cut is kept through that word, so that it is
// read back as a failure line.
func TestKnownFailureLongLines(t *testing.T) {
	failed := ending(checks.Result{ExitCode: 1})
	baseline := func(lines []string) []progress.Check {
		return []progress.Check{{Name: "unit", Excerpt: strings.Join(append(lines, failed), "\n")}}
	}
	state := func(n int) string { return strings.Repeat(fmt.Sprintf("field=%d value=0.%d ", n, n), 300) }
	kept := baseline(collect("--- FAIL: TestBig (0.5s): "+state(7)+"\n", 1))
	if l := kept[0].Excerpt; len(l) > 1<<10 || !strings.HasPrefix(l, "--- FAIL: TestBig (Ns): field=N value=N") {
		t.Errorf("a long line kept as %d bytes: %.60q…", len(l), l)
	}
	whole := baseline([]string{"--- FAIL: TestBig (Ns): " + strings.TrimSpace(strings.Repeat("field=N value=N ", 300))})
	for name, b := range map[string][]progress.Check{"kept cut": kept, "kept whole": whole} {
		if !known(b, "unit", "--- FAIL: TestBig (12.25s): "+state(123456)) {
			t.Errorf("%s, a long failure line with other numbers is not known", name)
		}
		if known(b, "unit", "--- FAIL: TestOther (0.5s): "+state(7)) {
			t.Errorf("%s, another test's long failure line is taken for known", name)
		}
	}
	late := `{"msg":"` + strings.Repeat("lorem ", 150) + `","level":"error", "trace":"` + strings.Repeat("ipsum ", 150) + `"}`
	got := collect(late, 64)
	if len(got) != 1 || !strings.HasSuffix(got[0], `"level":"error", …`) {
		t.Fatalf("a line that says it failed at its end is kept as %q", got)
	}
	if !known(baseline(got), "unit", late) {
		t.Errorf("a line that says it failed at its end is not known against its own baseline %q", got[0])
	}
}

func TestKnownFailure(t *testing.T) {
	baseline := []progress.Check{{Name: "unit", Excerpt: "--- FAIL: TestLegacy (0.01s)\nFAIL"}}
	if !known(baseline, "unit", "--- FAIL: TestLegacy (0.02s)\nFAIL") {
		t.Error("the baseline's own failure is not known")
	}
	if known(baseline, "unit", "--- FAIL: TestLegacy (0.02s)\n--- FAIL: TestNew (0.01s)\nFAIL") {
		t.Error("a new failure is taken for known")
	}
	if known(baseline, "other", "--- FAIL: TestLegacy (0.02s)") {
		t.Error("a check the baseline did not run is taken for known")
	}
	if known([]progress.Check{{Name: "unit", Passed: true}}, "unit", "FAIL") {
		t.Error("a check that passed in the baseline is taken for known")
	}
	// A new case of a known test differs by its number alone.
	cases := []progress.Check{{Name: "unit", Excerpt: "--- FAIL: TestLogin/case_1 (0.01s)\ntest_add[1] FAILED\nFAIL"}}
	if !known(cases, "unit", "--- FAIL: TestLogin/case_1 (0.03s)\ntest_add[1] FAILED\nFAIL") {
		t.Error("the baseline's own numbered cases are not known")
	}
	for _, out := range []string{"--- FAIL: TestLogin/case_2 (0.00s)\nFAIL", "test_add[2] FAILED"} {
		if known(cases, "unit", out) {
			t.Errorf("a new numbered case is taken for known: %q", out)
		}
	}
	// Nor are a duration's or a share's in brackets, after a name or not.
	bracketed := []progress.Check{{Name: "unit", Excerpt: "(fail) math > sub [0.30ms]\ntests/test_x.py::test_old FAILED [100%]"}}
	if !known(bracketed, "unit", "(fail) math > sub [0.41ms]\ntests/test_x.py::test_old FAILED [ 50%]") {
		t.Error("a failure whose bracketed duration and share changed is not known")
	}
	// The digits of a time or a duration are no name's.
	timed := []progress.Check{{Name: "unit", Excerpt: "FAIL: TestDeadline: want after 2026-11-22T10:05:07Z (1m30.5s)"}}
	if !known(timed, "unit", "FAIL: TestDeadline: want after 2026-11-22T11:05:09Z (1m31.2s)") {
		t.Error("a failure whose time and duration changed is not known")
	}
	// A baseline kept before the digits of names were: still known.
	old := []progress.Check{{Name: "unit", Excerpt: "--- FAIL: TestLogin/case_N (Ns)"}}
	if !known(old, "unit", "--- FAIL: TestLogin/case_1 (0.02s)") {
		t.Error("a failure is not known against a baseline kept with every number out")
	}
}

// TestKnownFailureTally: a runner's summary of counts says what failed by
// its failure counts alone: tests added that pass, a warning or a skip do
// not make a known failure new; an error where there was none does.
func TestKnownFailureTally(t *testing.T) {
	for _, c := range []struct {
		name, baseline, now string
		known               bool
	}{
		{"pytest, a test added", "FAILED tests/test_legacy.py::test_old - AssertionError\n========== 1 failed, 10 passed in 0.50s ==========",
			"FAILED tests/test_legacy.py::test_old - AssertionError\n========== 1 failed, 11 passed, 1 warning in 0.52s ==========", true},
		{"pytest, passes first seen", "FAILED t.py::test_old\n=== 1 failed in 0.12s ===", "FAILED t.py::test_old\n=== 1 failed, 2 passed in 0.12s ===", true},
		{"pytest, an xfail added", "FAILED t.py::test_old\n=== 1 failed, 3 passed in 1s ===", "FAILED t.py::test_old\n=== 1 failed, 3 passed, 1 xfailed in 1s ===", true},
		{"pytest, an error added", "FAILED t.py::test_old\n=== 1 failed, 3 passed in 1s ===", "FAILED t.py::test_old\nERROR t.py::test_new\n=== 1 failed, 3 passed, 1 error in 1s ===", false},
		{"pytest, only the tally tells an error", "=== 1 failed, 3 passed in 1s ===", "=== 1 failed, 3 passed, 1 error in 1s ===", false},
		{"jest", "Tests:       1 failed, 10 passed, 11 total", "Tests:       1 failed, 12 passed, 13 total", true},
		{"cargo", "test result: FAILED. 10 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s",
			"test result: FAILED. 12 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.02s", true},
		{"a new failing test is still new", "FAILED t.py::test_old\n=== 1 failed, 3 passed in 1s ===", "FAILED t.py::test_old\nFAILED t.py::test_new\n=== 2 failed, 3 passed in 1s ===", false},
	} {
		baseline := []progress.Check{{Name: "unit", Excerpt: c.baseline}}
		if got := known(baseline, "unit", c.now); got != c.known {
			t.Errorf("%s: known = %v, want %v", c.name, got, c.known)
		}
	}
	// One count is no tally: a line that says it, is read as ever.
	if got := normalise("ERROR: 3 tests failed to compile"); got != "ERROR: N tests failed to compile" {
		t.Errorf("normalise of one count = %q", got)
	}
}

// TestKnownFailureEnding: a check that ends otherwise than in its baseline
// (times out, crashes) fails otherwise; another exit status (the number of
// failures, for some runners) is no other ending.
func TestKnownFailureEnding(t *testing.T) {
	failed := checks.Result{ExitCode: 1}
	baseline := []progress.Check{{Name: "unit", Excerpt: "--- FAIL: TestOld\n" + ending(failed)}}
	out := collect("--- FAIL: TestOld\n", 1)
	if !knownFailure(baseline, "unit", out, ending(failed)) {
		t.Error("the same failure, ended the same way, is not known")
	}
	for name, r := range map[string]checks.Result{
		"a timeout": {ExitCode: -1, TimedOut: true},
		"a crash":   {ExitCode: 139},
	} {
		if knownFailure(baseline, "unit", out, ending(r)) {
			t.Errorf("%s is taken for the baseline's failure", name)
		}
	}
	if !knownFailure(baseline, "unit", out, ending(checks.Result{ExitCode: 2})) {
		t.Error("the same failure with another exit status is not known")
	}
	// mocha exits with the number of failures: 130 of them is no crash.
	many := []progress.Check{{Name: "unit", Excerpt: "--- FAIL: TestOld\n" + ending(checks.Result{ExitCode: 130})}}
	if !knownFailure(many, "unit", out, ending(checks.Result{ExitCode: 125})) {
		t.Error("an exit status past 128 that no crash gives is taken for a crash")
	}
	// An output with no failure word is kept whole, its ending after it,
	// and read back so (prettier --check, gofmt -l, diff).
	plain := "[warn] src/old.js\n[warn] Code style issues found in the above file.\n"
	kept := []progress.Check{{Name: "fmt", Excerpt: strings.Join(append(collect(plain, 1), ending(failed)), "\n")}}
	if !knownFailure(kept, "fmt", collect(plain, 1), ending(failed)) {
		t.Errorf("a failure without failure words is not known against its own baseline %q", kept[0].Excerpt)
	}
	// A baseline kept before endings were: the lines alone decide.
	if !knownFailure([]progress.Check{{Name: "unit", Excerpt: "--- FAIL: TestOld"}}, "unit", out, ending(checks.Result{ExitCode: 2})) {
		t.Error("a baseline without its ending no longer knows its failure")
	}
}

func TestKnownFailureEdges(t *testing.T) {
	baseline := []progress.Check{{Name: "unit", Excerpt: "--- FAIL: TestLegacy (0.01s)"}}
	if known(baseline, "unit", "") {
		t.Error("a silent failure is taken for known")
	}
	// A check failing in more ways than a baseline keeps is known when it
	// fails the same way again.
	var many strings.Builder
	for i := range maxBaselineLines + 50 {
		fmt.Fprintf(&many, "--- FAIL: TestLegacy%c%c\n", 'a'+i/26, 'a'+i%26)
	}
	out := many.String()
	kept := []progress.Check{{Name: "unit", Excerpt: strings.Join(distinctFailures(out), "\n")}}
	if !known(kept, "unit", out) {
		t.Errorf("a failure of %d lines is not known against its own baseline", maxBaselineLines+50)
	}
	// A known line repeated past the window does not hide a new one.
	padded := strings.Repeat("--- FAIL: TestLegacyaa\n", maxBaselineLines+1) + "--- FAIL: TestNew\n"
	if known(kept, "unit", padded) {
		t.Error("a new failure after a known one repeated many times is taken for known")
	}
	// The ledger keeps control bytes as U+FFFD; the live output has them raw.
	coloured := []progress.Check{{Name: "unit", Excerpt: "\uFFFD[31m--- FAIL: TestLegacy (0.01s)\uFFFD[0m"}}
	if !known(coloured, "unit", "\x1b[31m--- FAIL: TestLegacy (0.02s)\x1b[0m") {
		t.Error("a coloured failure read back from the ledger is not known")
	}
}

// ledger writes the entries, oldest first, as the loop appends them, and
// returns the file's path.
func ledger(t *testing.T, entries ...progress.Entry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), ProgressFile)
	l, err := progress.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i, e := range entries {
		e.Iteration = i + 1
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestRepeats(t *testing.T) {
	retry := func(story, fp string) progress.Entry {
		return progress.Entry{StoryID: story, Outcome: Retry, Fingerprint: fp}
	}
	path := ledger(t,
		retry("A", "x"), // older than the other failure: not counted
		retry("A", "y"), // another failure ends the run of x
		retry("A", "x"), //
		retry("B", "x"), // another story's
		progress.Entry{StoryID: "A", Outcome: Interrupted}, // no attempt
		retry("A", "x"),
	)
	for _, c := range []struct {
		story, fp string
		want      int
	}{{"A", "x", 2}, {"A", "y", 0}, {"B", "x", 1}, {"C", "x", 0}} {
		if got, err := repeats(path, c.story, c.fp); err != nil || got != c.want {
			t.Errorf("repeats(%s, %s) = %d, %v; want %d", c.story, c.fp, got, err, c.want)
		}
	}
}

func TestBaselineOf(t *testing.T) {
	a := []progress.Check{{Name: "unit", Excerpt: "--- FAIL: TestLegacy"}}
	b := []progress.Check{{Name: "unit", Passed: true}}
	path := ledger(t,
		progress.Entry{StoryID: "A", Outcome: Interrupted}, // further back than the baseline
		progress.Entry{StoryID: "A", Outcome: Retry, Baseline: a},
		progress.Entry{StoryID: "B", Outcome: Retry, Baseline: b},
		progress.Entry{StoryID: "A", Outcome: Retry},
		progress.Entry{StoryID: "B", Outcome: Done},
		progress.Entry{StoryID: "D", Outcome: Interrupted}, // its baseline lost with a killed ralph
	)
	for _, c := range []struct {
		story string
		want  []progress.Check
		ran   bool
	}{{"A", a, true}, {"B", b, true}, {"C", nil, false}, {"D", nil, true}} {
		got, ran, err := baselineOf(path, c.story)
		if err != nil || ran != c.ran || len(got) != len(c.want) || len(got) > 0 && (got[0].Name != c.want[0].Name || got[0].Passed != c.want[0].Passed || got[0].Excerpt != c.want[0].Excerpt) {
			t.Errorf("baselineOf(%s) = %+v, %v, %v; want %+v, %v", c.story, got, ran, err, c.want, c.ran)
		}
	}
}

// BenchmarkFailureCollector: a baseline check's whole output goes through
// the collector; plain build output, the most of any, is passed over
// without the pattern.
func BenchmarkFailureCollector(b *testing.B) {
	benchCollector(b, []byte(strings.Repeat("compiling module 42 of 97: internal/parser/lexer.go ok (0.13s)\n", 512)), 0, nil)
}

// benchCollector writes chunk to a failure collector, each time after
// calling next (if not nil), and checks that it kept want failure lines.
func benchCollector(b *testing.B, chunk []byte, want int, next func()) {
	b.SetBytes(int64(len(chunk)))
	c := newFailureCollector(func(s string) string { return s })
	for b.Loop() {
		if next != nil {
			next()
		}
		c.Write(chunk)
	}
	if got := c.failures(""); len(got) != want {
		b.Fatalf("%d failure lines, want %d: %.200q", len(got), want, got)
	}
}

// BenchmarkFailureCollectorRepeats: a check failing the same way over and
// over (a flood of one error line) is read at the speed of its output, not
// redacted and normalised line after line.
func BenchmarkFailureCollectorRepeats(b *testing.B) {
	benchCollector(b, []byte(strings.Repeat("error: the same failure, again\n", 1024)), 1, nil)
}

// BenchmarkFailureCollectorLongLines: a check whose failure lines are each
// tens of KiB long (a dump of state after "error"), each with its own
// number, is read at about the speed of its output, not held and
// normalised whole. The numbers have eight digits, which hexRE takes for a
// hash: a pattern runs over what is read of every line.
func BenchmarkFailureCollectorLongLines(b *testing.B) {
	const n, size = 16, 60 << 10
	line := []byte("error 00000000 " + strings.Repeat("x", size-len("error 00000000 ")-1) + "\n")
	chunk := bytes.Repeat(line, n)
	round := 0
	benchCollector(b, chunk, 1, func() {
		// Each line a number of its own, as in a long output.
		for i := range n {
			copy(chunk[i*size+len("error "):], fmt.Sprintf("%08d", round*n+i))
		}
		round++
	})
}

// BenchmarkFailureCollectorNumbers: a check failing the same way over and
// over, each line with its own numbers (a request's id, a duration), which
// normalise takes out: more lines than the collector remembers as read.
func BenchmarkFailureCollectorNumbers(b *testing.B) {
	var out strings.Builder
	for i := range 16 << 10 {
		fmt.Fprintf(&out, "ERROR: request %d failed after %d.%dms\n", i, i%97, i%10)
	}
	benchCollector(b, []byte(out.String()), 1, nil)
}

// FuzzMayFail: the collector's quick look never passes over a line that
// the failure pattern would pick.
func FuzzMayFail(f *testing.F) {
	for _, s := range []string{"ERROR", "Exceptions:", "--- FAIL: TestX", "PanicKed", "AssertionError", "unDEFINED", "want 3", "fai", "\u212a", "ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if errorLineRE().MatchString(line) && !mayFail([]byte(line)) {
			t.Errorf("mayFail(%q) = false, but the pattern picks it", line)
		}
	})
}

// normaliseByPatterns is normalise with every pattern run on every line,
// as it was before it looked first for what each looks for, and with no
// cut (see keep); tally says whether the line is a runner's tally.
func normaliseByPatterns(line string) (_ string, tally bool) {
	line = escapeRE().ReplaceAllString(line, "")
	line = tmpRE().ReplaceAllString(line, "/tmp/…")
	line = hexRE().ReplaceAllString(line, "#")
	var b strings.Builder
	last := 0
	for _, m := range numberRE().FindAllStringIndex(line, -1) {
		if !inName(line, m[0], m[1]) {
			b.WriteString(line[last:m[0]])
			b.WriteByte('N')
			last = m[1]
		}
	}
	if last > 0 {
		line = b.String() + line[last:]
	}
	if counts := countRE().FindAllString(line, -1); len(counts) > 1 || len(counts) == 1 && strings.HasPrefix(line, "==") && strings.HasSuffix(line, "==") {
		var failing []string
		for _, c := range counts {
			if failCountRE().MatchString(c) && !slices.Contains(failing, c) {
				failing = append(failing, c)
			}
		}
		return strings.Join(failing, ", "), true
	}
	return strings.ReplaceAll(strings.Join(strings.Fields(line), " "), "[ ", "["), false
}

// FuzzNormalise: normalise, which runs a pattern only on a line that may
// have what it looks for, reads every line as the patterns do, and cuts a
// long one (see keep) so that, read back from the ledger, it reads the same
// again, as the whole line would.
func FuzzNormalise(f *testing.F) {
	for _, s := range []string{
		"--- FAIL: TestX (0.12s)", "\x1b[31mERROR\x1b[0m in 0x1f3a", "é\x01", "\xff[0m", "\uFFFD[1m",
		"open /tmp/go-build123/x: deadbeefcafe", "test_add[3] FAILED [ 50%]", "=== 1 failed in 0.1s ===",
		"Tests: 1 failed, 2 passed, 3 total", "n passed N failed", "v1.2.3 at 22T10:05 1m30s 0x", "abcdef12 abcdef1",
		"error: " + strings.Repeat("word 12 ", 100) + "end", strings.Repeat("y", 600) + " error [ 3",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		whole, tally := normaliseByPatterns(line)
		want := whole
		if !tally {
			want = keep(whole)
		}
		got := normalise(line)
		if got != want {
			t.Errorf("normalise(%q) = %q, the patterns read %q", line, got, want)
		}
		if again, _ := normaliseByPatterns(whole); !tally && again == whole && normalise(got) != got {
			t.Errorf("normalise(%q) = %q, read back %q", line, got, normalise(got))
		}
	})
}

func TestChanges(t *testing.T) {
	now := time.Now()
	file := func(name string, size int64, mod time.Time) fileInfo {
		return fileInfo{name: name, info: fakeInfo{size: size, mod: mod}}
	}
	before := workFiles([]fileInfo{
		file("b.go", 10, now), file("a.go", 10, now), file("gone.go", 1, now),
		file(PRDFile, 5, now), file("same.go", 3, now),
	})
	after := workFiles([]fileInfo{
		file("a.go", 11, now), file("b.go", 10, now.Add(time.Second)), file("new.go", 1, now),
		file(PRDFile, 6, now), file(ProgressFile, 7, now), file("same.go", 3, now),
	})
	got := changes(before, after)
	want := []string{"a.go", "b.go", "gone.go", "new.go"}
	if !slices.Equal(got, want) {
		t.Errorf("changes = %q, want %q (ralph's own files are not the agent's work)", got, want)
	}
	if got := changes(before, before); got != nil {
		t.Errorf("changes of a listing against itself = %q, want none", got)
	}
}

// fakeInfo is an fs.FileInfo of a size and a time of change.
type fakeInfo struct {
	fs.FileInfo
	size int64
	mod  time.Time
}

func (f fakeInfo) Size() int64        { return f.size }
func (f fakeInfo) ModTime() time.Time { return f.mod }

// TestStallReason: the reason says what the same failure was, and does not
// say that an agent whose changes ralph undid changed nothing.
func TestStallReason(t *testing.T) {
	failing := []progress.Check{{Name: "unit"}, {Name: "lint", Passed: true}}
	for _, c := range []struct {
		name    string
		e       progress.Entry
		changed bool
		undid   bool
		want    string
	}{
		{"a check failing, nothing changed", progress.Entry{Checks: failing, Claim: "done"}, false, false,
			"stalled: the same failure 3 times in a row (check unit failed, and the agent changed nothing)"},
		{"files changed, no claim", progress.Entry{Checks: failing}, true, false,
			"stalled: the same failure 3 times in a row (check unit failed, and claimed nothing)"},
		{"guarded files changed and undone", progress.Entry{Tampered: []string{"prd.json: the agent replaced it; ralph restored the file"}}, false, true,
			"stalled: the same failure 3 times in a row (no check failed, and the agent changed nothing but what ralph guards, which ralph undid, and claimed nothing)"},
		{"files changed, guarded ones undone", progress.Entry{Checks: failing, Claim: "done", Tampered: []string{"prd.json: the agent replaced it; ralph restored the file"}}, true, true,
			"stalled: the same failure 3 times in a row (check unit failed)"},
		{"the checks' changes undone", progress.Entry{Checks: failing, Claim: "done", Tampered: []string{"schema/a.sql: the checks changed this protected file; ralph restored it"}}, false, false,
			"stalled: the same failure 3 times in a row (check unit failed, and the agent changed nothing)"},
	} {
		if got := stallReason(c.e, 3, c.changed, c.undid); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
