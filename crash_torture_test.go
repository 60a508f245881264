package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ralph-harness/ralph/prd"
	"github.com/ralph-harness/ralph/progress"
)

// tortureKills is how many times TestCrashTorture kills ralph by default;
// RALPH_TORTURE=N asks for N (200 for the long run).
const tortureKills = 15

// TestCrashTorture kills ralph (SIGKILL, no clean-up of its own) at random
// instants of a scripted run, again and again: while it loads, while the
// agent or the checks run, while it writes prd.json or appends to
// progress.txt, while git commits. Half of the kills take ralph's git with it
// (its whole process group), as closing a terminal would, which leaves
// .git/index.lock behind. After every kill the three files must hold:
//
//   - prd.json parses, and progress.txt parses;
//   - the ledger only grew: every entry there before is there still, the
//     same (no recorded verdict is lost);
//   - iteration numbers strictly increase, and each entry's running total
//     of iterations is its own number (counters carry on);
//   - totals (tokens, cost, time) never decrease from one entry to the next;
//   - no story that passed is un-passed, and no story's attempts decrease;
//     but for one that passed with its iteration still in flight: the kill
//     fell between the verdict's save and its entry, and the next start
//     cannot tell that verdict from one the agent wrote before it killed
//     ralph, so it un-passes the story and says so in the entry.
//
// And after the next start (a run that got as far as its first iteration):
//
//   - the iteration that was in flight at the kill is in the ledger under
//     its own number as interrupted, with its story and attempt (but for
//     one killed during its story's baseline checks, whose number the
//     next iteration takes);
//   - the temp files the kill left are gone;
//   - nothing the killed agent started is still running.
//
// At the end a final `ralph loop` runs to completion (exit 0), every story
// passes, `ralph validate` is content, and no temp file, index.lock or agent
// process is left.
//
// Half of the kills fall at a random instant, the others as soon as a file
// event shows ralph starting a short write (prd.json's temp file created,
// progress.txt written, git's index.lock created), which random instants
// seldom hit. An entry is appended with one write(2), which SIGKILL does not
// tear; torn entries come from partial writes (a full disk), which
// crash_disk_full.txtar and loop_torn_ledger.txtar cover.
//
// It runs 15 kills in about five seconds; RALPH_TORTURE=200 runs 200, and
// RALPH_TORTURE_SEED repeats a run's random choices (not its timing).
func TestCrashTorture(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kills processes and reads /proc the Linux way")
	}
	for _, tool := range []string{"ralph", "fakeagent", "git", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	kills := tortureKills
	if s := os.Getenv("RALPH_TORTURE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("RALPH_TORTURE=%q: want a number of kills", s)
		}
		kills = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RALPH_TORTURE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("%d kills, RALPH_TORTURE_SEED=%d", kills, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	tt := newTorture(t, kills, rng)
	var stats struct{ inFlight, unvouched, counted, temps, torn, indexLock, group, triggered int }
	for i := 0; i < kills; i++ {
		delay := time.Duration(rng.Int64N(int64(tortureMaxDelay)))
		group := rng.IntN(2) == 0
		// Half of the kills are at a random instant; the others come as
		// soon as ralph begins one of the short writes that a random
		// instant seldom hits.
		var on trigger
		if rng.IntN(2) == 0 {
			on = triggers[rng.IntN(len(triggers))]
		}
		out, hit := tt.killAfter(delay, group, on)
		if group {
			stats.group++
		}
		if hit {
			stats.triggered++
		}
		// What the run before this one left behind is cleaned up once
		// this run got to its first iteration.
		started := strings.Contains(out, "[ralph] iteration ")
		tt.check(started)
		if tt.inFlight != nil {
			stats.inFlight++
		}
		if tt.unvouched() != "" {
			stats.unvouched++
		}
		if tt.counted() != "" {
			stats.counted++
		}
		if len(tt.temps) > 0 {
			stats.temps++
		}
		if tt.torn > 0 {
			stats.torn++
		}
		if _, err := os.Stat(filepath.Join(tt.dir, ".git", "index.lock")); err == nil {
			stats.indexLock++
		}
	}
	t.Logf("after the kills: %d with an iteration in flight (%d of them with its story passing, %d with its attempt counted and not passing), %d with temp files left, %d with a torn entry, %d with .git/index.lock left; %d kills took git along, %d came as a write began",
		stats.inFlight, stats.unvouched, stats.counted, stats.temps, stats.torn, stats.indexLock, stats.group, stats.triggered)
	tt.finish()
}

// tortureMaxDelay bounds how long a run lives before it is killed: about two
// iterations, so that kills fall on every phase of one.
const tortureMaxDelay = 400 * time.Millisecond

type torture struct {
	t       *testing.T
	dir     string // the work directory, a git work tree
	fake    string // FAKEAGENT_DIR
	env     []string
	stories int
	events  *fsnotify.Watcher

	// What the last check saw.
	entries  []progress.Entry
	stories0 map[string]prd.Status
	inFlight *progress.Mark
	temps    []string
	torn     int
}

func newTorture(t *testing.T, kills int, rng *rand.Rand) *torture {
	root := t.TempDir()
	tt := &torture{
		t:       t,
		dir:     filepath.Join(root, "work"),
		fake:    filepath.Join(root, "fake"),
		stories: kills + 3,
	}
	tt.env = append(os.Environ(),
		"FAKEAGENT_DIR="+tt.fake,
		"GIT_AUTHOR_NAME=ralph test", "GIT_AUTHOR_EMAIL=test@ralph.invalid",
		"GIT_COMMITTER_NAME=ralph test", "GIT_COMMITTER_EMAIL=test@ralph.invalid",
		"GIT_CONFIG_NOSYSTEM=1", "CLAUDECODE=1",
	)
	for _, d := range []string{tt.dir, tt.fake} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tt.dir, "harness.toml"), `[agent]
preset = "claude"
command = ["fakeagent"]
timeout = "20s"
idle_timeout = "20s"

[loop]
max_attempts = 100
max_iterations = 0
# A story's attempts may claim nothing three times in a row, with kills
# between them: a stall, not what this test is about.
stall_after = 0

[[checks]]
name = "work"
run = "sleep 0.03; test -s work.txt"
timeout = "10s"
# Run before each story's first attempt too, with a marker of its own.
baseline = true

[git]
commit = true
`)
	var stories []map[string]any
	for i := 1; i <= tt.stories; i++ {
		stories = append(stories, map[string]any{
			"id": fmt.Sprintf("US-%03d", i), "title": fmt.Sprintf("Story %d", i),
			"priority": i, "passes": false,
		})
	}
	data, err := json.MarshalIndent(map[string]any{"project": "Torture", "userStories": stories}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(tt.dir, "prd.json"), string(data)+"\n")
	write(filepath.Join(tt.dir, "progress.txt"), "## Codebase Patterns\n- ralph is killed a lot here\n")
	// Every agent run is a turn of the fake; the kills use up turns too.
	// A turn writes to the work tree (something to commit), works for a
	// while, sometimes leaves a child behind, and mostly claims done.
	for turn := 1; turn <= 4*kills+4*tt.stories+50; turn++ {
		var b strings.Builder
		fmt.Fprintf(&b, "write work.txt turn %d\\n\n", turn)
		if turn%5 == 0 {
			b.WriteString("background 3s\n")
		}
		fmt.Fprintf(&b, "sleep %dms\n", rng.IntN(80))
		if turn%4 == 0 {
			b.WriteString("claude-result Not done yet.\n")
		} else {
			b.WriteString("claude-result Did it.\\n<ralph>done</ralph>\n")
		}
		write(filepath.Join(tt.fake, strconv.Itoa(turn)), b.String())
	}
	tt.git("init", "-q")
	tt.git("add", "-A")
	tt.git("commit", "-q", "-m", "initial")
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	for _, d := range []string{tt.dir, filepath.Join(tt.dir, ".git")} {
		if err := w.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	tt.events = w
	tt.entries, tt.stories0 = nil, map[string]prd.Status{}
	return tt
}

func (tt *torture) git(args ...string) {
	tt.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = tt.dir, tt.env
	if out, err := cmd.CombinedOutput(); err != nil {
		tt.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// ralph starts `ralph loop` in its own process group.
func (tt *torture) ralph(args ...string) (*exec.Cmd, *bytes.Buffer) {
	tt.t.Helper()
	cmd := exec.Command("ralph", append([]string{"-C", tt.dir}, args...)...)
	cmd.Env = tt.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tt.t.Fatal(err)
	}
	return cmd, &out
}

// A trigger picks the file events of a write that a kill should cut short.
type trigger struct {
	name string
	op   fsnotify.Op
	file func(base string) bool
}

var triggers = []trigger{
	{"prd.json's temp file", fsnotify.Create, func(b string) bool { return strings.HasPrefix(b, ".prd.json.tmp-") }},
	{"an append to progress.txt", fsnotify.Write, func(b string) bool { return b == "progress.txt" }},
	{"git's index.lock", fsnotify.Create, func(b string) bool { return b == "index.lock" }},
}

// killAfter runs `ralph loop` and kills it with SIGKILL (with its process
// group, git included, when group) after delay, or as soon as a file event
// of on happens, and returns its output and whether the event came first.
func (tt *torture) killAfter(delay time.Duration, group bool, on trigger) (string, bool) {
	tt.t.Helper()
	for len(tt.events.Events) > 0 {
		<-tt.events.Events // the last run's
	}
	var timeout <-chan time.Time
	if on.file == nil {
		timeout = time.After(delay)
	} else {
		// In case the write never comes.
		timeout = time.After(2 * tortureMaxDelay)
	}
	cmd, out := tt.ralph("loop", "--quiet")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	hit := false
wait:
	for {
		select {
		case err := <-done:
			// It ended by itself: only because every story passes.
			if err != nil {
				tt.t.Fatalf("ralph loop ended by itself: %v\n%s", err, out)
			}
			return out.String(), false
		case <-timeout:
			break wait
		case ev := <-tt.events.Events:
			if on.file != nil && ev.Op.Has(on.op) && on.file(filepath.Base(ev.Name)) {
				hit = true
				break wait
			}
		case err := <-tt.events.Errors:
			tt.t.Fatalf("watch: %v", err)
		}
	}
	pid := cmd.Process.Pid
	if group {
		pid = -pid
	}
	syscall.Kill(pid, syscall.SIGKILL)
	<-done
	return out.String(), hit
}

// check asserts the invariants after a kill; started says whether the run
// that was killed got as far as its first iteration.
func (tt *torture) check(started bool) {
	t := tt.t
	t.Helper()
	f, err := prd.Load(filepath.Join(tt.dir, "prd.json"))
	if err != nil {
		t.Fatalf("prd.json does not parse after a kill: %v", err)
	}
	unvouched, counted := tt.unvouched(), tt.counted()
	stories := map[string]prd.Status{}
	for _, s := range f.Stories {
		st := s.Status()
		stories[s.ID] = st
		was := tt.stories0[s.ID]
		if was.Passes && !st.Passes && s.ID != unvouched {
			t.Fatalf("%s passed, and passes no more after a kill", s.ID)
		}
		// The verdict no entry vouched for (a pass, or the attempt a
		// retry or a failure counted) is undone: its iteration is an
		// interrupted one, which counts no attempt.
		undone := (s.ID == unvouched || s.ID == counted) && !st.Passes && st.Failed == "" && st.Attempts == tt.inFlight.Attempt-1
		if st.Attempts < was.Attempts && !undone {
			t.Fatalf("the attempts of %s went down from %d to %d", s.ID, was.Attempts, st.Attempts)
		}
	}
	entries, torn := tt.ledger()
	if len(entries) < len(tt.entries) || !slices.EqualFunc(entries[:len(tt.entries)], tt.entries, sameEntry) {
		t.Fatalf("the ledger lost or changed entries: had %v, has %v", iterationsOf(tt.entries), iterationsOf(entries))
	}
	for i, e := range entries {
		if e.Totals.Iterations != e.Iteration {
			t.Fatalf("entry %d counts %d iterations in its totals", e.Iteration, e.Totals.Iterations)
		}
		if i == 0 {
			continue
		}
		prev := entries[i-1]
		if e.Iteration <= prev.Iteration {
			t.Fatalf("iteration numbers do not increase: %v", iterationsOf(entries))
		}
		p, c := prev.Totals, e.Totals
		if c.Tokens < p.Tokens || c.CostUSD < p.CostUSD || c.Elapsed < p.Elapsed {
			t.Fatalf("totals went down from iteration %d (%+v) to %d (%+v)", prev.Iteration, p, e.Iteration, c)
		}
	}
	if started {
		if m := tt.inFlight; m != nil && !m.Recorded() {
			tt.noAgentOf(m.Iteration)
		}
		if m := tt.inFlight; m != nil && m.Recorded() {
			i := slices.IndexFunc(entries, func(e progress.Entry) bool { return e.Iteration == m.Iteration })
			if i < 0 {
				t.Fatalf("iteration %d was in flight at the last kill and is not in the ledger: %v", m.Iteration, iterationsOf(entries))
			}
			e := entries[i]
			if e.Outcome != "interrupted" || e.StoryID != m.StoryID || e.Attempt != m.Attempt {
				t.Fatalf("iteration %d, in flight at the last kill, is recorded as %s %s attempt %d; want interrupted %s attempt %d",
					m.Iteration, e.StoryID, e.Outcome, e.Attempt, m.StoryID, m.Attempt)
			}
			if undone := slices.ContainsFunc(e.Tampered, func(l string) bool {
				return strings.HasPrefix(l, "prd.json: "+m.StoryID+" was marked passing ")
			}); undone != (unvouched != "") {
				t.Fatalf("iteration %d, in flight at the last kill with its story passing: %t; its entry says the pass was undone: %t (%q)",
					m.Iteration, unvouched != "", undone, e.Tampered)
			}
			if undone := strings.Contains(e.AgentNote, "the next ralph loop undid it"); undone != (counted != "") {
				t.Fatalf("iteration %d, in flight at the last kill with its attempt counted: %t; its entry says the verdict was undone: %t (%q)",
					m.Iteration, counted != "", undone, e.AgentNote)
			}
			tt.noAgentOf(m.Iteration)
		}
		for _, p := range tt.temps {
			if _, err := os.Stat(p); err == nil {
				t.Fatalf("temp file %s, left by a kill, is still there after the next start", p)
			}
		}
	}
	m, err := progress.InFlight(filepath.Join(tt.dir, "progress.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tt.entries, tt.stories0, tt.inFlight, tt.temps, tt.torn = entries, stories, m, tt.tempFiles(), torn
}

// unvouched is the story that passed while its iteration was in flight at
// the last check (the kill fell between the verdict's save and its entry),
// or "": no entry vouches for the pass, and the next start un-passes it
// and says so.
func (tt *torture) unvouched() string {
	if m := tt.inFlight; m != nil && tt.stories0[m.StoryID].Passes {
		return m.StoryID
	}
	return ""
}

// counted is the story that did not pass and had the attempt of its
// iteration counted while that iteration was in flight at the last check
// (the kill fell between a verdict of retry or failed and its entry), or
// "": the next start undoes the verdict and says so.
func (tt *torture) counted() string {
	if m := tt.inFlight; m != nil && m.Attempt >= 1 {
		if st := tt.stories0[m.StoryID]; !st.Passes && st.Attempts >= m.Attempt {
			return m.StoryID
		}
	}
	return ""
}

func sameEntry(a, b progress.Entry) bool {
	return bytes.Equal(progress.Format(a), progress.Format(b))
}

func (tt *torture) ledger() ([]progress.Entry, int) {
	tt.t.Helper()
	f, err := os.Open(filepath.Join(tt.dir, "progress.txt"))
	if err != nil {
		tt.t.Fatal(err)
	}
	defer f.Close()
	_, entries, torn, err := progress.Parse(f)
	if err != nil {
		tt.t.Fatalf("progress.txt does not parse: %v", err)
	}
	return entries, torn
}

func (tt *torture) tempFiles() []string {
	tt.t.Helper()
	var temps []string
	for _, pattern := range []string{".prd.json.tmp-*", ".harness.toml.tmp-*"} {
		m, err := filepath.Glob(filepath.Join(tt.dir, pattern))
		if err != nil {
			tt.t.Fatal(err)
		}
		temps = append(temps, m...)
	}
	return temps
}

// noAgentOf fails unless, within a few seconds, no live process carries the
// environment of this run's agent of the iteration (any, when 0).
func (tt *torture) noAgentOf(iteration int) {
	tt.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := tt.agents(iteration)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tt.t.Fatalf("agent processes of iteration %d still running: %v", iteration, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (tt *torture) agents(iteration int) []int {
	procs, _ := os.ReadDir("/proc")
	var pids []int
	for _, d := range procs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
		if err != nil {
			continue
		}
		vars := strings.Split(string(env), "\x00")
		if !slices.Contains(vars, "FAKEAGENT_DIR="+tt.fake) ||
			!slices.ContainsFunc(vars, func(v string) bool { return strings.HasPrefix(v, "RALPH_ITERATION=") }) {
			continue
		}
		if iteration > 0 && !slices.Contains(vars, "RALPH_ITERATION="+strconv.Itoa(iteration)) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + d.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue // a zombie waits only to be reaped
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// finish runs the loop to its end and checks what it leaves.
func (tt *torture) finish() {
	t := tt.t
	t.Helper()
	cmd, out := tt.ralph("loop", "--quiet")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the final ralph loop: %v\n%s", err, out)
	}
	tt.check(true)
	for id, st := range tt.stories0 {
		if !st.Passes {
			t.Errorf("%s does not pass after the final loop", id)
		}
	}
	if len(tt.stories0) != tt.stories {
		t.Errorf("prd.json has %d stories, want %d", len(tt.stories0), tt.stories)
	}
	if tt.inFlight != nil {
		t.Errorf("iteration %d is in flight after the final loop", tt.inFlight.Iteration)
	}
	if len(tt.temps) > 0 {
		t.Errorf("temp files left after the final loop: %v", tt.temps)
	}
	if _, err := os.Stat(filepath.Join(tt.dir, ".git", "index.lock")); err == nil {
		t.Errorf(".git/index.lock left after the final loop")
	}
	tt.noAgentOf(0)
	validate, vout := tt.ralph("validate")
	if err := validate.Wait(); err != nil || strings.Contains(vout.String(), "warning") {
		t.Errorf("ralph validate after the final loop: %v\n%s", err, vout)
	}
	t.Logf("%d entries, %d stories; last: %s", len(tt.entries), tt.stories, tt.entries[len(tt.entries)-1].Header())
}

func iterationsOf(entries []progress.Entry) []int {
	var its []int
	for _, e := range entries {
		its = append(its, e.Iteration)
	}
	return its
}
