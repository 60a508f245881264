package loop

import (
	"testing"

	"github.com/ralph-harness/ralph/progress"
)

func TestFingerprint(t *testing.T) {
	entry := func(out, claim string) progress.Entry {
		return progress.Entry{Claim: claim, Checks: []progress.Check{
			{Name: "ok", Passed: true},
			{Name: "test", Excerpt: out},
		}}
	}
	a := fingerprint(entry("--- FAIL: TestX (0.12s)\nx_test.go:12: want 3, got 4\nok\n", ""), false)
	// Times, line numbers and temporary paths differ between runs of the
	// same failure: the fingerprint does not.
	b := fingerprint(entry("--- FAIL: TestX (0.98s)\nx_test.go:13: want 3, got 4\nok\n", ""), false)
	if a != b {
		t.Errorf("the same failure gave two fingerprints: %s, %s", a, b)
	}
	for name, other := range map[string]string{
		"another failure": fingerprint(entry("--- FAIL: TestY (0.12s)\n", ""), false),
		"a change":        fingerprint(entry("--- FAIL: TestX (0.12s)\nx_test.go:12: want 3, got 4\n", ""), true),
		"a claim":         fingerprint(entry("--- FAIL: TestX (0.12s)\nx_test.go:12: want 3, got 4\n", "done"), false),
	} {
		if other == a {
			t.Errorf("%s did not change the fingerprint", name)
		}
	}
}

func TestKnownFailure(t *testing.T) {
	baseline := []progress.Check{{Name: "unit", Excerpt: "--- FAIL: TestLegacy (0.01s)\nFAIL"}}
	if !knownFailure(baseline, "unit", "--- FAIL: TestLegacy (0.02s)\nFAIL") {
		t.Error("the baseline's own failure is not known")
	}
	if knownFailure(baseline, "unit", "--- FAIL: TestLegacy (0.02s)\n--- FAIL: TestNew (0.01s)\nFAIL") {
		t.Error("a new failure is taken for known")
	}
	if knownFailure(baseline, "other", "--- FAIL: TestLegacy (0.02s)") {
		t.Error("a check the baseline did not run is taken for known")
	}
	if knownFailure([]progress.Check{{Name: "unit", Passed: true}}, "unit", "FAIL") {
		t.Error("a check that passed in the baseline is taken for known")
	}
}

func TestKnownFailureEdges(t *testing.T) {
	baseline := []progress.Check{{Name: "unit", Excerpt: "--- FAIL: TestLegacy (0.01s)"}}
	if knownFailure(baseline, "unit", "") {
		t.Error("a silent failure is taken for known")
	}
	// The ledger keeps control bytes as U+FFFD; the live output has them raw.
	coloured := []progress.Check{{Name: "unit", Excerpt: "\uFFFD[31m--- FAIL: TestLegacy (0.01s)\uFFFD[0m"}}
	if !knownFailure(coloured, "unit", "\x1b[31m--- FAIL: TestLegacy (0.02s)\x1b[0m") {
		t.Error("a coloured failure read back from the ledger is not known")
	}
}
