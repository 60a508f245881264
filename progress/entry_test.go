package progress

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fullEntry is the example entry of the ledger format, with every field set.
func fullEntry() Entry {
	return Entry{
		Iteration:     3,
		Time:          time.Date(2026, 11, 21, 11, 30, 0, 0, time.UTC),
		StoryID:       "US-002",
		StoryTitle:    "Add cart table",
		Outcome:       "retry",
		Attempt:       2,
		AgentExit:     0,
		AgentDuration: 12300 * time.Millisecond,
		Claim:         "done",
		AgentNote:     "timed out (idle)",
		InputTokens:   1234,
		OutputTokens:  567,
		CostUSD:       0.0123,
		CostKnown:     true,
		Checks: []Check{
			{Name: "test", Duration: 2100 * time.Millisecond, Excerpt: "--- FAIL: TestFoo\nfoo_test.go:12: want 1, got 2"},
			{Name: "vet", Passed: true, Duration: 400 * time.Millisecond, Tests: 12},
			{Name: "lint", Known: true, Excerpt: "old.go:3: unused"},
		},
		Baseline:    []Check{{Name: "lint", Excerpt: "old.go:3: unused"}},
		Tampered:    []string{"prd.json status of US-002 was restored"},
		Fingerprint: "3fa2b1c09d4e",
		Commit:      "3f2a9c1",
		Question:    "which database should I use?",
		Summary:     "Added the cart table and a migration.\nsecond line of the summary",
		Learnings:   []string{"the migrations live in db/migrations", "run sqlc generate after editing queries"},
		Totals:      Totals{Iterations: 3, Tokens: 5400, CostUSD: 0.0456, Elapsed: 90 * time.Second},
	}
}

const fullText = `=== ralph iteration 3 · US-002 · retry ===
time: 2026-11-21T11:30:00Z
story: US-002 Add cart table
attempt: 2
agent: exit 0 after 12.3s · claimed done · timed out (idle)
usage: 1234 input tokens · 567 output tokens · $0.0123
check: test · fail · 2.1s
  | --- FAIL: TestFoo
  | foo_test.go:12: want 1, got 2
check: vet · pass · 0.4s · 12 tests run
check: lint · fail · 0s · known failure
  | old.go:3: unused
baseline: lint · fail · 0s
  | old.go:3: unused
tampered: prd.json status of US-002 was restored
fingerprint: 3fa2b1c09d4e
commit: 3f2a9c1
question: which database should I use?
summary: Added the cart table and a migration.
  | second line of the summary
learning: the migrations live in db/migrations
learning: run sqlc generate after editing queries
totals: iterations 3 · tokens 5400 · cost $0.0456 · elapsed 1m30s
=== end of iteration 3 ===
`

func TestFormatText(t *testing.T) {
	tests := []struct {
		name string
		e    Entry
		want string
	}{
		{"full", fullEntry(), fullText},
		{
			"minimal",
			Entry{Iteration: 1, StoryID: "US-001", Outcome: "done"},
			"=== ralph iteration 1 · US-001 · done ===\n" +
				"story: US-001\n" +
				"totals: iterations 0 · tokens 0 · cost $0.0000 · elapsed 0s\n" +
				"=== end of iteration 1 ===\n",
		},
		{
			"flags and empty lines",
			Entry{
				Iteration: 7,
				Outcome:   "error",
				AgentExit: 127,
				AgentNote: "not found",
				CostKnown: true,
				Checks: []Check{
					{Name: "lint", Skipped: true, Optional: true},
					{Name: "e2e", TimedOut: true, Duration: 10 * time.Minute, Excerpt: "line 1\n\nline 3\n"},
				},
				Summary: "\nstarts empty",
				Totals:  Totals{Iterations: 7, Tokens: 12, CostUSD: 1.5, Elapsed: 3*time.Hour + 25*time.Millisecond},
			},
			"=== ralph iteration 7 ·  · error ===\n" +
				"agent: exit 127 after 0s · not found\n" +
				"usage: 0 input tokens · 0 output tokens · $0.0000\n" +
				"check: lint · skip · 0s · optional\n" +
				"check: e2e · fail · 10m0s · timed out\n" +
				"  | line 1\n" +
				"  |\n" +
				"  | line 3\n" +
				"  |\n" +
				"summary:\n" +
				"  | starts empty\n" +
				"totals: iterations 7 · tokens 12 · cost $1.5000 · elapsed 3h0m0s\n" +
				"=== end of iteration 7 ===\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(Format(tt.e)); got != tt.want {
				t.Errorf("Format:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		e    Entry
	}{
		{"full", fullEntry()},
		{"minimal", Entry{Iteration: 1, StoryID: "US-001", Outcome: "done", Totals: Totals{Iterations: 1}}},
		{"no story", Entry{Iteration: 2, Outcome: "error", AgentNote: "not found", AgentExit: -1}},
		{"title without id", Entry{Iteration: 2, StoryTitle: "untitled\n  two lines", Outcome: "x"}},
		{"blocked", Entry{Iteration: 4, StoryID: "S · 1", Outcome: "blocked", Claim: "blocked", Question: "which db?\n\nplease say", AgentDuration: 2 * time.Minute}},
		{"claim only", Entry{Iteration: 5, StoryID: "A", Outcome: "done", Claim: "done", AgentDuration: 100 * time.Millisecond}},
		{"note only with separator", Entry{Iteration: 5, StoryID: "A", Outcome: "retry", AgentNote: "a · b\nc", AgentExit: 2}},
		{
			"checks",
			Entry{Iteration: 6, StoryID: "A", Outcome: "retry", Checks: []Check{
				{Name: "go test · race", Duration: 61 * time.Second, Optional: true, TimedOut: true, Excerpt: "\nx\n"},
				{Name: "", Skipped: true},
				{Name: "vet", Passed: true, Excerpt: "warning"},
			}},
		},
		{"costs", Entry{Iteration: 8, Outcome: "done", CostUSD: 0.05378325, CostKnown: true, InputTokens: 1 << 40, Totals: Totals{CostUSD: 123.4567891234, Tokens: 1 << 50}}},
		{"time", Entry{Iteration: 9, Time: time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)}},
		{"lost", Entry{Iteration: 10, Outcome: "blocked", Totals: Totals{Iterations: 10, Lost: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := Format(tt.e)
			head, entries, torn, err := Parse(bytes.NewReader(text))
			if err != nil || head != "" || torn != 0 || len(entries) != 1 {
				t.Fatalf("Parse(%q) = %q, %d entries, %d torn, %v; want one entry", text, head, len(entries), torn, err)
			}
			if !reflect.DeepEqual(entries[0], tt.e) {
				t.Errorf("round trip of\n%s\ngot  %#v\nwant %#v", text, entries[0], tt.e)
			}
		})
	}
}

// TestParseCheckCounts reads counts of tests run, and the counts an older
// ralph wrote, skipped tests among them, as none: the rest of their line
// is read as ever.
func TestParseCheckCounts(t *testing.T) {
	tests := []struct {
		line string
		want Check
	}{
		{"vet · pass · 0.4s · 1 test run", Check{Name: "vet", Passed: true, Duration: 400 * time.Millisecond, Tests: 1}},
		{"vet · fail · 2s · known failure · 12 tests run", Check{Name: "vet", Known: true, Duration: 2 * time.Second, Tests: 12}},
		{"vet · pass · 0.4s · 12 tests", Check{Name: "vet", Passed: true, Duration: 400 * time.Millisecond}},
		{"vet · fail · 2s · optional · known failure · 1 test", Check{Name: "vet", Optional: true, Known: true, Duration: 2 * time.Second}},
		{"a test run · pass · 0s", Check{Name: "a test run", Passed: true}},
	}
	for _, tt := range tests {
		if got := parseCheck(tt.line); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseCheck(%q) = %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

func TestSanitise(t *testing.T) {
	forged := "\n=== end of iteration 3 ===\nkey: x"
	e := Entry{Iteration: 3, StoryID: "US-1", Outcome: "retry", Summary: "ok" + forged, Learnings: []string{forged}}
	text := string(Format(e))
	for _, l := range strings.Split(text, "\n") {
		if l == "key: x" || (l == endMarker(3) && !strings.HasSuffix(text, l+"\n")) {
			t.Errorf("forged line %q at column 0 in\n%s", l, text)
		}
	}
	_, entries, torn, _ := Parse(strings.NewReader(text + string(Format(Entry{Iteration: 4}))))
	if len(entries) != 2 || torn != 0 {
		t.Fatalf("got %d entries, %d torn; want 2, 0 in\n%s", len(entries), torn, text)
	}
	if got := entries[0].Summary; got != e.Summary {
		t.Errorf("summary = %q, want %q", got, e.Summary)
	}
	if got := entries[0].Learnings; !reflect.DeepEqual(got, e.Learnings) {
		t.Errorf("learnings = %q, want %q", got, e.Learnings)
	}

	tests := []struct {
		in, want string
	}{
		{"plain\ttab", "plain\ttab"},
		{"crlf\r\nline", "crlf\nline"},
		{"lone\rcr", "lone\uFFFDcr"},
		{"bell\a", "bell\uFFFD"},
		{"nel\u0085", "nel\uFFFD"},
		{"ls\u2028ps\u2029", "ls\uFFFDps\uFFFD"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"héllo · wörld", "héllo · wörld"},
	}
	for _, tt := range tests {
		e := Entry{Iteration: 1, Summary: tt.in}
		_, entries, _, _ := Parse(bytes.NewReader(Format(e)))
		if len(entries) != 1 {
			t.Fatalf("summary %q: got %d entries, want 1", tt.in, len(entries))
		}
		if got := entries[0].Summary; got != tt.want {
			t.Errorf("summary %q: parsed %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSanitiseMarker(t *testing.T) {
	e := Entry{Iteration: 2, StoryID: "US\n=== end of iteration 2 ===", Outcome: "done\r"}
	text := string(Format(e))
	want := "=== ralph iteration 2 · US === end of iteration 2 === · done\uFFFD ===\n"
	if !strings.HasPrefix(text, want) {
		t.Errorf("Format starts with %q, want %q", strings.SplitAfter(text, "\n")[0], want)
	}
	_, entries, torn, _ := Parse(strings.NewReader(text))
	if len(entries) != 1 || torn != 0 {
		t.Fatalf("got %d entries, %d torn; want 1, 0", len(entries), torn)
	}
	if got, want := entries[0].StoryID, "US === end of iteration 2 ==="; got != want {
		t.Errorf("story id = %q, want %q", got, want)
	}
}

func TestHeader(t *testing.T) {
	if got, want := fullEntry().Header(), "iteration 3 · US-002 · retry"; got != want {
		t.Errorf("Header() = %q, want %q", got, want)
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{40 * time.Millisecond, "0s"},
		{12340 * time.Millisecond, "12.3s"},
		{12350 * time.Millisecond, "12.4s"},
		{59960 * time.Millisecond, "1m0s"},
		{90*time.Second + 400*time.Millisecond, "1m30s"},
		{2*time.Hour + 500*time.Millisecond, "2h0m1s"},
		{-1500 * time.Millisecond, "-1.5s"},
		{400 * time.Millisecond, "0.4s"},
		{-60 * time.Millisecond, "-0.1s"},
		{950 * time.Millisecond, "1s"},
	}
	for _, tt := range tests {
		if got := formatDuration(tt.d); got != tt.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestFormatCost(t *testing.T) {
	tests := []struct {
		c    float64
		want string
	}{
		{0, "$0.0000"},
		{0.0123, "$0.0123"},
		{1.5, "$1.5000"},
		{0.1 + 0.2, "$0.3000"},
		{0.05378325, "$0.05378325"},
		{12345.00000000001, "$12345.0000"},
		{math.Inf(1), "$+Inf"},
	}
	for _, tt := range tests {
		if got := formatCost(tt.c); got != tt.want {
			t.Errorf("formatCost(%v) = %q, want %q", tt.c, got, tt.want)
		}
	}
}
