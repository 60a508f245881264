package loop

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/prd"
	"github.com/ralph-harness/ralph/progress"
)

var resumeTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// resumeDir makes a work directory whose progress.txt holds entries and
// then what a killed ralph left (tail), and prd.json with one story, with
// its attempts and the members of extra (`, "failed": "…"`, say); it
// does not pass unless extra says so.
func resumeDir(t *testing.T, attempts int, extra string, entries []progress.Entry, tail string) string {
	t.Helper()
	dir := t.TempDir()
	prdJSON := `{"userStories": [{"id": "US-1", "title": "First", "priority": 1, "attempts": ` +
		strconv.Itoa(attempts) + extra + `}]}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, PRDFile), []byte(prdJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("## Codebase Patterns\n")
	for _, e := range entries {
		b.WriteString("\n")
		b.Write(progress.Format(e))
	}
	b.WriteString(tail)
	if err := os.WriteFile(filepath.Join(dir, ProgressFile), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func recoverIn(t *testing.T, dir string) (warnings string) {
	t.Helper()
	ledger, err := progress.Open(filepath.Join(dir, ProgressFile))
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	var stderr bytes.Buffer
	o := Options{Dir: dir, Err: &stderr}
	if err := o.recover(context.Background(), ledger); err != nil {
		t.Fatalf("recover: %v", err)
	}
	return stderr.String()
}

func TestResumeInFlight(t *testing.T) {
	done := progress.Entry{Iteration: 4, Time: resumeTime, StoryID: "US-1", Outcome: Retry, Attempt: 2,
		CostUSD: 0.5, CostKnown: true, Totals: progress.Totals{Iterations: 4, Tokens: 900, CostUSD: 1.25, Elapsed: time.Minute}}
	mark := "=== ralph started iteration 5 · US-1 · attempt 3 · 2026-01-02T03:04:05Z ===\n"
	want := progress.Entry{Iteration: 5, Time: resumeTime, StoryID: "US-1", StoryTitle: "First", Outcome: Interrupted, Attempt: 3,
		AgentExit: -1, AgentNote: "ralph stopped before the iteration ended; recorded by the next ralph loop",
		Totals: progress.Totals{Iterations: 5, Tokens: 900, CostUSD: 1.25, Elapsed: time.Minute}}
	note := func(verdict string) *progress.Entry {
		e := want
		e.AgentNote = "ralph stopped after saving the verdict (" + verdict + ") in prd.json and before recording it here; the next ralph loop undid it, as an interrupted iteration counts no attempt"
		return &e
	}
	tests := []struct {
		name     string
		attempts int    // of the story in prd.json
		extra    string // the story's other members in prd.json
		tail     string
		want     *progress.Entry
		blocked  string // the story's question after recover
	}{
		{"marker", 2, "", "\n" + mark, &want, ""},
		{"marker and a torn entry", 2, "", "\n" + mark + "=== ralph iteration 5 · US-1 · retry ===\ntime: 2026", &want, ""},
		// A verdict saved and no entry: undone, as the interrupted entry
		// counts no attempt. A story set aside keeps its question.
		{"retry saved", 3, "", "\n" + mark + "=== ralph iteration 5 · US-1 · retry ===\n", note("retry"), ""},
		{"failure saved", 3, `, "failed": "check t failed; no attempts left"`, "\n" + mark,
			note("failed: check t failed; no attempts left"), ""},
		{"set aside", 3, `, "blocked": "Which bank?"`, "\n" + mark, note("blocked: Which bank?"), "Which bank?"},
		// A marker of attempt 0 (ralph writes none) vouches for no count:
		// a pass is undone, and the attempts stay.
		{"attempt 0", 2, "", "\n" + strings.Replace(mark, "attempt 3", "attempt 0", 1), func() *progress.Entry {
			e := want
			e.Attempt = 0
			return &e
		}(), ""},
		{"attempt 0, passing", 2, `, "passes": true`, "\n" + strings.Replace(mark, "attempt 3", "attempt 0", 1), func() *progress.Entry {
			e := want
			e.Attempt = 0
			e.Tampered = []string{"prd.json: US-1 was marked passing during the iteration, with no verdict; ralph undid that"}
			return &e
		}(), ""},
		{"nothing in flight", 2, "", "", nil, ""},
		{"torn marker", 2, "", "\n" + mark[:20], nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := resumeDir(t, tt.attempts, tt.extra, []progress.Entry{done}, tt.tail)
			before, err := os.ReadFile(filepath.Join(dir, ProgressFile))
			if err != nil {
				t.Fatal(err)
			}
			warnings := recoverIn(t, dir)
			tail, err := progress.Tail(filepath.Join(dir, ProgressFile), 1)
			if err != nil {
				t.Fatal(err)
			}
			after, err := os.ReadFile(filepath.Join(dir, ProgressFile))
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if !bytes.Equal(after, before) || warnings != "" {
					t.Errorf("recover changed progress.txt or warned (%q) with nothing in flight", warnings)
				}
				return
			}
			if !bytes.HasPrefix(after, before) {
				t.Fatalf("recover did not only append to progress.txt")
			}
			if len(tail) != 1 || !reflect.DeepEqual(tail[0], *tt.want) {
				t.Errorf("last entry:\n%#v\nwant:\n%#v", tail, *tt.want)
			}
			// The story is as it was before the iteration: 2 attempts,
			// not failed, and blocked only if set aside.
			f, err := prd.Read(filepath.Join(dir, PRDFile), PRDFile)
			if err != nil {
				t.Fatal(err)
			}
			if s := f.Story("US-1"); s.Attempts != 2 || s.Failed != "" || s.Passes || s.Blocked != tt.blocked {
				t.Errorf("US-1 after recover: %d attempts, failed %q, passes %v, blocked %q; want 2, \"\", false, %q",
					s.Attempts, s.Failed, s.Passes, s.Blocked, tt.blocked)
			}
			if !strings.Contains(warnings, "iteration 5 (US-1) was cut short") {
				t.Errorf("warnings %q do not say what was recorded", warnings)
			}
			// Once recorded, it is recorded once.
			if again := recoverIn(t, dir); again != "" {
				t.Errorf("second recover warned %q", again)
			}
			if m, err := progress.InFlight(filepath.Join(dir, ProgressFile)); m != nil || err != nil {
				t.Errorf("InFlight after recover = %+v, %v", m, err)
			}
		})
	}
}
