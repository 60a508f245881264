package loop

import (
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
	chunk := []byte(strings.Repeat("compiling module 42 of 97: internal/parser/lexer.go ok (0.13s)\n", 512))
	b.SetBytes(int64(len(chunk)))
	c := newFailureCollector(func(s string) string { return s })
	for b.Loop() {
		c.Write(chunk)
	}
	if got := c.failures(""); len(got) != 0 {
		b.Fatalf("failure lines in a build's output: %q", got)
	}
}

// BenchmarkFailureCollectorRepeats: a check failing the same way over and
// over (a flood of one error line) is read at the speed of its output, not
// redacted and normalised line after line.
func BenchmarkFailureCollectorRepeats(b *testing.B) {
	chunk := []byte(strings.Repeat("error: the same failure, again\n", 1024))
	b.SetBytes(int64(len(chunk)))
	c := newFailureCollector(func(s string) string { return s })
	for b.Loop() {
		c.Write(chunk)
	}
	if got := c.failures(""); len(got) != 1 {
		b.Fatalf("failure lines = %q, want the one", got)
	}
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

func TestChanges(t *testing.T) {
	now := time.Now()
	file := func(name string, size int64, mod time.Time) fileInfo {
		return fileInfo{name, fakeInfo{size: size, mod: mod}}
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
		want    string
	}{
		{"a check failing, nothing changed", progress.Entry{Checks: failing, Claim: "done"}, false,
			"stalled: the same failure 3 times in a row (check unit failed, and the agent changed nothing)"},
		{"files changed, no claim", progress.Entry{Checks: failing}, true,
			"stalled: the same failure 3 times in a row (check unit failed, and claimed nothing)"},
		{"guarded files changed and undone", progress.Entry{Tampered: []string{"prd.json: the agent replaced it; ralph restored the file"}}, false,
			"stalled: the same failure 3 times in a row (no check failed, and the agent changed nothing but what ralph guards, which ralph undid, and claimed nothing)"},
		{"the checks' changes undone", progress.Entry{Checks: failing, Claim: "done", Tampered: []string{"schema/a.sql: the checks changed this protected file; ralph restored it"}}, false,
			"stalled: the same failure 3 times in a row (check unit failed, and the agent changed nothing)"},
	} {
		if got := stallReason(c.e, 3, c.changed); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
