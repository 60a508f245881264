package loop

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/internal/glob"
	"github.com/ralph-harness/ralph/prd"
)

// mustParse parses text as a prd.json, failing t if it does not parse.
func mustParse(t testing.TB, text string) *prd.File {
	t.Helper()
	f, err := prd.Parse([]byte(text), "prd.json")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestUndoTampering(t *testing.T) {
	parse := func(text string) *prd.File { return mustParse(t, text) }
	orig := parse(`{"project": "P", "userStories": [
		{"id": "A", "title": "a", "passes": false, "checks": ["make a"]},
		{"id": "B", "title": "b", "passes": false},
		{"id": "C", "title": "c", "passes": false, "attempts": 2},
		{"id": "E", "title": "e", "passes": false, "checks": ["make e", "make lint"]}]}`)
	// The agent, on story A: marks it passing and drops its check, marks
	// C passing and gives it a check of its own, removes B, drops a check
	// of E's; a person adds D and notes on C.
	cur := parse(`{"project": "P", "userStories": [
		{"id": "A", "title": "a", "passes": true},
		{"id": "C", "title": "c", "passes": true, "attempts": 2, "notes": "mine", "checks": ["true"]},
		{"id": "D", "title": "d", "passes": false, "checks": ["make d"]},
		{"id": "E", "title": "e", "passes": false, "checks": ["make lint"]}]}`)

	got := undoTampering(orig, cur, "A")
	want := []string{"changed the status of A", "changed the checks of A", "removed story B", "marked C as passing",
		"changed the checks of C", "changed the checks of E"}
	if !slices.Equal(got, want) {
		t.Errorf("undoTampering said %q, want %q", got, want)
	}
	var ids []string
	for _, s := range cur.Stories {
		ids = append(ids, s.ID)
	}
	if want := []string{"A", "B", "C", "D", "E"}; !slices.Equal(ids, want) {
		t.Errorf("stories after = %q, want %q (B back where it was)", ids, want)
	}
	if a := cur.Story("A"); a.Passes || !slices.Equal(a.Checks, []string{"make a"}) {
		t.Errorf("A after = passes %v, checks %q; want as before", a.Passes, a.Checks)
	}
	if c := cur.Story("C"); c.Passes || c.Attempts != 2 || c.Notes != "mine" || len(c.Checks) != 0 {
		t.Errorf("C after = passes %v, attempts %d, notes %q, checks %q; want its status and checks back and the note kept", c.Passes, c.Attempts, c.Notes, c.Checks)
	}
	if d := cur.Story("D"); !slices.Equal(d.Checks, []string{"make d"}) {
		t.Errorf("D after = checks %q; want a new story's checks kept", d.Checks)
	}
	if e := cur.Story("E"); !slices.Equal(e.Checks, []string{"make e", "make lint"}) {
		t.Errorf("E after = checks %q; want them back", e.Checks)
	}
	if err := cur.Validate("prd.json"); err != nil {
		t.Errorf("the file after does not validate: %v", err)
	}
	if _, err := cur.Marshal(); err != nil {
		t.Errorf("the file after does not marshal: %v", err)
	}
	if again := undoTampering(orig, cur, "A"); len(again) != 0 {
		t.Errorf("a second undo found %q, want nothing left", again)
	}
}

// TestUndoTamperingNewStories: a story new after the agent ran, added or
// renamed, is kept, but not its status as only the judge sets it; a
// question asked of it may be a person's (`ralph task add`, then `ralph
// task block`), and is kept.
func TestUndoTamperingNewStories(t *testing.T) {
	parse := func(text string) *prd.File { return mustParse(t, text) }
	orig := parse(`{"userStories": [
		{"id": "A", "title": "a", "passes": false},
		{"id": "B", "title": "b", "passes": false}]}`)
	cur := parse(`{"userStories": [
		{"id": "A", "title": "a", "passes": false},
		{"id": "B2", "title": "b", "passes": true, "attempts": 1},
		{"id": "N", "title": "n", "passes": true, "notes": "kept"},
		{"id": "F", "title": "f", "passes": false, "failed": "too hard"},
		{"id": "Q", "title": "q", "passes": false, "blocked": "Which colour?"}]}`)

	got := undoTampering(orig, cur, "A")
	want := []string{"removed story B", "marked new story B2 as passing", "marked new story N as passing",
		"changed the status of new story F"}
	if !slices.Equal(got, want) {
		t.Errorf("undoTampering said %q, want %q", got, want)
	}
	for _, id := range []string{"B", "B2", "N", "F"} {
		s := cur.Story(id)
		if s == nil {
			t.Errorf("story %s is gone, want it kept", id)
			continue
		}
		if st := s.Status(); st != (prd.Status{}) {
			t.Errorf("%s after = %+v, want no status", id, st)
		}
	}
	if n := cur.Story("N"); n != nil && n.Notes != "kept" {
		t.Errorf("N's notes after = %q, want them kept", n.Notes)
	}
	if q := cur.Story("Q"); q.Blocked != "Which colour?" {
		t.Errorf("Q's question after = %q, want it kept", q.Blocked)
	}
	if again := undoTampering(orig, cur, "A"); len(again) != 0 {
		t.Errorf("a second undo found %q, want nothing left", again)
	}
}

func TestSameJSON(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{`{"a": 1, "b": [true, null]}`, "{\n  \"b\": [true, null],\n  \"a\": 1\n}\n", true},
		{`{"a": 1}`, `{"a": 1.0}`, false},
		{`{"a": 12345678901234567890}`, `{"a": 12345678901234567891}`, false},
		{`{"a": "x"}`, `{"a": "y"}`, false},
		{`{"a": 1}`, `{"a": 1`, false},
	} {
		if got := sameJSON([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("sameJSON(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestReloadGuardGlobs: the guard's globs, compiled once, are compiled
// again from a reloaded harness.toml.
func TestReloadGuardGlobs(t *testing.T) {
	o := &Options{Out: io.Discard, Config: Config{Guard: Guard{Protect: []string{"old.txt"}}}}
	o.Reload = func() (Config, error) {
		return Config{Agent: AgentConfig{Argv: []string{"sh"}}, Guard: Guard{Protect: []string{"new.txt"}}}, nil
	}
	if !o.guardGlobs().protect.Match("old.txt") {
		t.Fatal("old.txt is not protected before the reload")
	}
	if _, err := o.reload(); err != nil {
		t.Fatal(err)
	}
	if p := o.guardGlobs().protect; p.Match("old.txt") || !p.Match("new.txt") {
		t.Errorf("after the reload: old.txt protected %t, new.txt %t; want false, true", p.Match("old.txt"), p.Match("new.txt"))
	}
}

// TestReloadPastEnv: every agent.env a run reloaded from is kept for the
// redactor, each entry once, however often harness.toml changes.
func TestReloadPastEnv(t *testing.T) {
	env := func(kv ...string) Config { return Config{Agent: AgentConfig{Argv: []string{"sh"}, Env: kv}} }
	o := &Options{Out: io.Discard, Config: env("A_TOKEN=first-secret")}
	next := []Config{env("A_TOKEN=second-secret"), env("A_TOKEN=first-secret"), env("A_TOKEN=second-secret")}
	o.Reload = func() (Config, error) { c := next[0]; next = next[1:]; return c, nil }
	for range 3 {
		if _, err := o.reload(); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"A_TOKEN=first-secret", "A_TOKEN=second-secret"}; !slices.Equal(o.pastEnv, want) {
		t.Errorf("pastEnv = %q, want %q", o.pastEnv, want)
	}
}

// TestTakeFilesTests: the test files are read only for the agent's guard,
// which puts a deleted one back; the protected ones always.
func TestTakeFilesTests(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a_test.go", "p.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := &Options{Dir: dir, Config: Config{Guard: Guard{Tests: []string{"*_test.go"}, Protect: []string{"p.txt"}}}}
	for _, tests := range []bool{false, true} {
		s, err := takeFiles(context.Background(), o, tests, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.tests["a_test.go"]; ok != tests || len(s.protected) != 1 {
			t.Errorf("takeFiles(tests %t): test file kept %t, %d protected; want %t, 1", tests, ok, len(s.protected), tests)
		}
	}
}

// TestGuardPRDBrokenBefore: a prd.json already broken before git ran (a
// person's edit while the loop waited) is no error for git's guard: left
// as it is when git did not touch it, put back when git did.
func TestGuardPRDBrokenBefore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, PRDFile)
	broken := []byte(`{"userStories": [`)
	if err := os.WriteFile(path, broken, 0o644); err != nil {
		t.Fatal(err)
	}
	o := &Options{Dir: dir, Out: io.Discard}
	s := snapshot{prd: slices.Clone(broken)}
	if _, found, err := s.guardPRD(o, nil, "", byGit); err != nil || len(found) != 0 {
		t.Errorf("guardPRD of an untouched broken file = %q, %v; want nothing, no error", found, err)
	}
	if err := os.WriteFile(path, []byte(`{"userStories": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, found, err := s.guardPRD(o, nil, "", byGit)
	if want := []string{"prd.json: a program git ran changed it; ralph restored the file"}; err != nil || !slices.Equal(found, want) {
		t.Errorf("guardPRD of a changed broken file = %q, %v; want %q", found, err, want)
	}
	if now, _ := os.ReadFile(path); string(now) != string(broken) {
		t.Errorf("prd.json after = %q, want %q back", now, broken)
	}
	// The agent's guard and the checks' still take it for bad input.
	if _, _, err := s.guardPRD(o, &prd.File{}, "", byChecks); !errors.As(err, new(*InputError)) {
		t.Errorf("guardPRD for the checks = %v, want an InputError", err)
	}
}

// TestGuardPatterns: the guard's globs as people write them match the
// project's file names as meant.
func TestGuardPatterns(t *testing.T) {
	for _, c := range []struct {
		glob    string
		matches []string
		misses  []string
	}{
		{"./migrations/**", []string{"migrations/1.sql", "migrations/a/b.sql"}, []string{"x/migrations/1.sql"}},
		{"/config.yml", []string{"config.yml"}, []string{"a/config.yml"}},
		{"docs", []string{"docs", "docs/guide.md", "docs/a/b.md"}, []string{"docs.md", "x/docs/a.md"}},
		{"schema/", []string{"schema/v1/user.json"}, []string{"schema.json"}},
		{"*_test.go", []string{"a_test.go"}, []string{"pkg/a_test.go", "a.go"}},
		{"**/*_test.go", []string{"a_test.go", "pkg/a_test.go"}, []string{"a.go"}},
		{"./", []string{"a", "b/c"}, nil},
	} {
		g := &guardGlobs{protect: glob.Compile(guardPatterns([]string{c.glob})...)}
		for _, name := range c.matches {
			if !g.protects(name) {
				t.Errorf("%q does not protect %s", c.glob, name)
			}
		}
		for _, name := range c.misses {
			if g.protects(name) {
				t.Errorf("%q protects %s", c.glob, name)
			}
		}
	}
}

// TestTemplateGlob: the prompt template is protected where harness.toml's
// loader reads it, within the work directory, however it is written.
func TestTemplateGlob(t *testing.T) {
	for name, want := range map[string]string{
		"p.tmpl":               "p.tmpl",
		"./prompts/p.tmpl":     "prompts/p.tmpl",
		"/p.tmpl":              "", // absolute: outside the work directory
		"/work/prompts/p.tmpl": "prompts/p.tmpl",
		"prompts/../p.tmpl":    "p.tmpl",
		"../elsewhere/p.tmpl":  "",
		"":                     "",
	} {
		o := &Options{Dir: "/work", Config: Config{PromptTemplateName: name}}
		if got := o.guardGlobs().template; got != want {
			t.Errorf("template %q is guarded as %q, want %q", name, got, want)
		}
	}
}

// TestGuardLedgerHead: the agent may edit the head of progress.txt, but not
// take it past its bound (8 KiB, or its length before when longer), which
// is undone with whatever else it did to the ledger.
func TestGuardLedgerHead(t *testing.T) {
	const (
		entry    = "=== ralph iteration 1 · US-001 · retry ===\nattempt: 1\n=== end of iteration 1 ===\n"
		appended = "=== ralph iteration 2 · US-001 · done ===\n"
		forged   = "=== ralph iteration 1 · US-001 · done ===\nattempt: 1\n=== end of iteration 1 ===\n"
		grown    = "made the head"
	)
	notes := func(n int) string {
		return "## Codebase Patterns\n" + strings.Repeat("- a pattern, line after line\n", n)
	}
	short, long := notes(10), notes(400) // 8 KiB is 282 of them
	for _, c := range []struct {
		name, before, after, want string
		found                     []string // what each line found says
	}{
		{"a modest note", short + entry, notes(11) + entry, notes(11) + entry, nil},
		{"notes up to the bound", short + entry, notes(281) + entry, notes(281) + entry, nil},
		{"notes past the bound", short + entry, notes(300) + entry, short + entry, []string{grown}},
		{"notes past the bound, no ledger yet", short, notes(300), short, []string{grown}},
		{"a shorter head", long + entry, short + entry, short + entry, nil},
		{"a long head edited within its length", long + entry, strings.Replace(long, "pattern", "PATTERN", 1) + entry,
			strings.Replace(long, "pattern", "PATTERN", 1) + entry, nil},
		{"a long head made longer", long + entry, notes(401) + entry, long + entry, []string{grown}},
		{"notes past the bound and an append", short + entry, notes(300) + entry + appended, short + entry, []string{"appended", grown}},
		{"notes past the bound and history rewritten", short + entry, notes(300) + forged, short + entry, []string{"rewrote", grown}},
		{"history rewritten, the notes kept", short + entry, notes(11) + forged, notes(11) + entry, []string{"rewrote"}},
		{"an append, the head as it was", short + entry, short + entry + appended, short + entry, []string{"appended"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ProgressFile)
			if err := os.WriteFile(path, []byte(c.after), 0o644); err != nil {
				t.Fatal(err)
			}
			o := &Options{Dir: dir, Out: io.Discard}
			found, err := snapshot{progress: []byte(c.before)}.guardLedger(o, byAgent)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != len(c.found) {
				t.Fatalf("found %q, want %d lines saying %q", found, len(c.found), c.found)
			}
			for i, f := range found {
				if !strings.Contains(f, c.found[i]) {
					t.Errorf("found[%d] = %q, want it to say %q", i, f, c.found[i])
				}
			}
			if now, _ := os.ReadFile(path); string(now) != c.want {
				t.Errorf("progress.txt after: %d bytes, want %d:\n%s", len(now), len(c.want), now)
			}
		})
	}
}

// TestTakeOwnKeepsText: the snapshot of an iteration keeps prd.json's text
// as readStories read it under the lock, not the file read again, and reads
// the file when it is given none.
func TestTakeOwnKeepsText(t *testing.T) {
	dir := t.TempDir()
	o := &Options{Dir: dir}
	disk := []byte(`{"project": "P", "userStories": []}`)
	if err := os.WriteFile(filepath.Join(dir, PRDFile), disk, 0o644); err != nil {
		t.Fatal(err)
	}
	read := []byte(`{"project": "Q", "userStories": []}`)
	s, err := takeOwn(o, read)
	if err != nil || string(s.prd) != string(read) {
		t.Errorf("takeOwn with a text read: %v, prd.json's copy %q, want %q", err, s.prd, read)
	}
	if s.places[0] == nil {
		t.Errorf("takeOwn with a text read left prd.json's place out")
	}
	s, err = takeOwn(o, nil)
	if err != nil || string(s.prd) != string(disk) {
		t.Errorf("takeOwn without: %v, prd.json's copy %q, want the file's %q", err, s.prd, disk)
	}
}
