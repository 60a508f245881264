package checks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testGrace keeps SIGKILL fallbacks short.
const testGrace = 100 * time.Millisecond

func options(tb testing.TB) Options {
	return Options{Dir: tb.TempDir(), Grace: testGrace}
}

func TestOutcomes(t *testing.T) {
	tests := []struct {
		name     string
		run      string
		passed   bool
		exitCode int
		output   string
	}{
		{"pass", "echo ok", true, 0, "ok\n"},
		{"fail", "echo 'FAIL: TestCart'; exit 1", false, 1, "FAIL: TestCart\n"},
		{"exit code", "exit 42", false, 42, ""},
		{"signal", "kill -TERM $$", false, 128 + int(syscall.SIGTERM), ""},
		{"stderr combined in order", "echo one; echo two >&2; echo three", true, 0, "one\ntwo\nthree\n"},
		{"shell syntax", "for x in a b; do echo $x; done | tr a-z A-Z", true, 0, "A\nB\n"},
		{"no stdin", "cat; echo eof", true, 0, "eof\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Check{Name: tt.name, Run: tt.run, Required: true}
			r := Run(context.Background(), []Check{c}, options(t))[0]
			if !reflect.DeepEqual(r.Check, c) {
				t.Errorf("Check = %+v, want %+v", r.Check, c)
			}
			if r.Passed != tt.passed || r.ExitCode != tt.exitCode || r.TimedOut || r.Err != nil {
				t.Errorf("passed %v, exit %d, timed out %v, err %v; want passed %v, exit %d", r.Passed, r.ExitCode, r.TimedOut, r.Err, tt.passed, tt.exitCode)
			}
			if r.Output != tt.output {
				t.Errorf("Output = %q, want %q", r.Output, tt.output)
			}
		})
	}
}

func TestDirAndEnv(t *testing.T) {
	o := options(t)
	o.Env = []string{"CHECK_VAR=from-env"}
	r := Run(context.Background(), []Check{{Name: "env", Run: `echo "$CHECK_VAR"; pwd`}}, o)[0]
	dir, err := filepath.EvalSymlinks(o.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "from-env\n" + dir + "\n"; r.Output != want {
		t.Errorf("Output = %q, want %q", r.Output, want)
	}
}

// TestConcurrent proves the checks run at the same time without timing them:
// each one creates its file and then waits until all three exist, which a
// serial run can never see. The wait gives up after a while, failing the
// check, so a serial run fails instead of hanging.
func TestConcurrent(t *testing.T) {
	const wait = `touch "$0"; i=0; while [ ! -e a ] || [ ! -e b ] || [ ! -e c ]; do i=$((i+1)); [ $i -gt 500 ] && exit 1; sleep 0.02; done`
	var cs []Check
	for _, name := range []string{"a", "b", "c"} {
		cs = append(cs, Check{Name: name, Run: strings.Replace(wait, `"$0"`, name, 1), Required: true})
	}
	for _, r := range Run(context.Background(), cs, options(t)) {
		if !r.Passed {
			t.Errorf("check %s: exit %d; the three checks did not run together", r.Name, r.ExitCode)
		}
	}
}

// TestParallelBound runs three checks one at a time: each holds a lock
// directory while it runs, and fails if another check holds it.
func TestParallelBound(t *testing.T) {
	const run = `mkdir lock 2>/dev/null || { echo overlap; exit 1; }; sleep 0.1; rmdir lock`
	cs := []Check{{Name: "a", Run: run}, {Name: "b", Run: run}, {Name: "c", Run: run}}
	o := options(t)
	o.Parallel = 1
	for _, r := range Run(context.Background(), cs, o) {
		if !r.Passed {
			t.Errorf("check %s: %q; want checks to run one at a time", r.Name, r.Output)
		}
	}
}

func TestTimeout(t *testing.T) {
	tests := []struct {
		name     string
		run      string
		exitCode int
	}{
		{"interrupted", "echo started; exec sleep 100", 128 + int(syscall.SIGINT)},
		{"ignores SIGINT", "trap '' INT; echo started; sleep 100", 128 + int(syscall.SIGKILL)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := []Check{
				{Name: "slow", Run: tt.run, Timeout: 200 * time.Millisecond},
				{Name: "quick", Run: "true", Timeout: time.Minute},
			}
			rs := Run(context.Background(), cs, options(t))
			r := rs[0]
			if !r.TimedOut || r.Passed || r.ExitCode != tt.exitCode {
				t.Errorf("timed out %v, passed %v, exit %d; want true, false, %d", r.TimedOut, r.Passed, r.ExitCode, tt.exitCode)
			}
			if r.Output != "started\n" {
				t.Errorf("Output = %q, want %q", r.Output, "started\n")
			}
			if q := rs[1]; !q.Passed || q.TimedOut {
				t.Errorf("quick check: passed %v, timed out %v; want true, false", q.Passed, q.TimedOut)
			}
		})
	}
}

func TestTimeoutExitZero(t *testing.T) {
	// A check that runs out of time has failed, even if it then exits 0.
	cs := []Check{{Name: "slow", Run: "trap 'exit 0' INT; sleep 100 & wait", Timeout: 200 * time.Millisecond}}
	r := Run(context.Background(), cs, options(t))[0]
	if !r.TimedOut || r.Passed || r.ExitCode != 0 {
		t.Errorf("timed out %v, passed %v, exit %d; want true, false, 0", r.TimedOut, r.Passed, r.ExitCode)
	}
}

// TestTimeoutDaemon: a check that exits in time passes, though a daemon it
// started in a session of its own (setsid) holds its output open past the
// timeout; what the daemon writes meanwhile is read for the grace period.
func TestTimeoutDaemon(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	o := options(t)
	o.Grace = 600 * time.Millisecond
	// The daemon outlives the check, and ends by itself after 2 s.
	cs := []Check{{Name: "starts a daemon", Run: `setsid sh -c 'for i in $(seq 40); do echo daemon; sleep 0.05; done' & sleep 0.05; echo started`, Timeout: 300 * time.Millisecond}}
	r := Run(context.Background(), cs, o)[0]
	if r.TimedOut || !r.Passed || r.ExitCode != 0 {
		t.Errorf("timed out %v, passed %v, exit %d; want false, true, 0", r.TimedOut, r.Passed, r.ExitCode)
	}
	if !strings.Contains(r.Output, "started\n") {
		t.Errorf("Output = %q, want it to hold %q", r.Output, "started\n")
	}
}

// cancelOnceThere calls cancel once a file is at path: a check made it,
// and is running.
func cancelOnceThere(cancel context.CancelFunc, path string) {
	defer cancel()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTailBounded(t *testing.T) {
	o := options(t)
	o.TailBytes = 1000
	cs := []Check{{Name: "flood", Run: `head -c 3000000 /dev/zero | tr '\0' x; echo; echo "the end" >&2`}}
	r := Run(context.Background(), cs, o)[0]
	if len(r.Output) != 1000 {
		t.Errorf("len(Output) = %d, want 1000", len(r.Output))
	}
	if !strings.HasSuffix(r.Output, "xx\nthe end\n") {
		t.Errorf("Output ends %q, want the end of the output", r.Output[max(0, len(r.Output)-20):])
	}

	o.TailBytes = 0 // the default
	r = Run(context.Background(), cs, o)[0]
	if len(r.Output) != DefaultTailBytes {
		t.Errorf("len(Output) = %d, want %d", len(r.Output), DefaultTailBytes)
	}
}

// TestWatch: the writer Watch gives a check gets the whole of its output,
// where Output keeps the tail; a check it gives none is not watched.
func TestWatch(t *testing.T) {
	o := options(t)
	o.TailBytes = 100
	cs := []Check{
		{Name: "watched", Run: `echo first; head -c 5000 /dev/zero | tr '\0' x; echo; echo last >&2`},
		{Name: "not", Run: "echo other"},
	}
	var got [2]*bytes.Buffer
	var mu sync.Mutex
	var asked []int
	o.Watch = func(i int) io.Writer {
		mu.Lock()
		asked = append(asked, i)
		mu.Unlock()
		if i != 0 {
			return nil
		}
		got[i] = new(bytes.Buffer)
		return got[i]
	}
	rs := Run(context.Background(), cs, o)
	want := "first\n" + strings.Repeat("x", 5000) + "\nlast\n"
	if got[0] == nil || got[0].String() != want {
		t.Errorf("watched output: %d bytes, want the whole %d", got[0].Len(), len(want))
	}
	if len(rs[0].Output) != 100 {
		t.Errorf("Output kept %d bytes, want 100", len(rs[0].Output))
	}
	// Asked and given no writer, the other check runs and keeps its output.
	slices.Sort(asked)
	if !slices.Equal(asked, []int{0, 1}) || rs[1].Output != "other\n" || !rs[1].Passed {
		t.Errorf("Watch asked for %v (want [0 1]); the unwatched check: output %q, passed %v", asked, rs[1].Output, rs[1].Passed)
	}
}

func TestOrder(t *testing.T) {
	// The first check finishes last; results still follow cs.
	cs := []Check{
		{Name: "slowest", Run: "sleep 0.3; echo 1"},
		{Name: "slow", Run: "sleep 0.1; echo 2"},
		{Name: "fast", Run: "echo 3"},
	}
	var progress syncBuffer
	o := options(t)
	o.Done = func(_ int, r Result) { fmt.Fprintln(&progress, r.Summary()) }
	rs := Run(context.Background(), cs, o)
	var names, outputs []string
	for _, r := range rs {
		names = append(names, r.Name)
		outputs = append(outputs, r.Output)
	}
	if want := []string{"slowest", "slow", "fast"}; !slices.Equal(names, want) {
		t.Errorf("names = %q, want %q", names, want)
	}
	if want := []string{"1\n", "2\n", "3\n"}; !slices.Equal(outputs, want) {
		t.Errorf("outputs = %q, want %q", outputs, want)
	}
	if got := strings.Count(progress.String(), "\n"); got != 3 {
		t.Errorf("%d progress lines, want 3:\n%s", got, progress.String())
	}
}

func TestProgress(t *testing.T) {
	// A clock that advances 1.234s per reading makes every duration 1.234s.
	var mu sync.Mutex
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var progress syncBuffer
	o := options(t)
	o.Parallel = 1 // lines in order
	o.Done = func(_ int, r Result) { fmt.Fprintln(&progress, r.Summary()) }
	o.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(1234 * time.Millisecond)
		return now
	}
	cs := []Check{
		{Name: "test", Run: "true", Required: true},
		{Name: "vet", Run: "exit 2", Required: true},
		{Name: "lint", Run: "exit 1"},
		{Name: "slow", Run: "exec sleep 100", Timeout: 50 * time.Millisecond, Required: true},
	}
	rs := Run(context.Background(), cs, o)
	if rs[0].Duration != 1234*time.Millisecond {
		t.Errorf("Duration = %v, want 1.234s", rs[0].Duration)
	}
	want := "check test: pass (1.2s)\n" +
		"check vet: fail, exit 2 (1.2s)\n" +
		"check lint: fail, exit 1, optional (1.2s)\n" +
		"check slow: timeout after 50ms (1.2s)\n"
	if got := progress.String(); got != want {
		t.Errorf("progress:\n%s\nwant:\n%s", got, want)
	}
}

func TestStartError(t *testing.T) {
	o := options(t)
	o.Dir = filepath.Join(o.Dir, "missing")
	var progress syncBuffer
	o.Done = func(_ int, r Result) { fmt.Fprintln(&progress, r.Summary()) }
	r := Run(context.Background(), []Check{{Name: "test", Run: "true"}}, o)[0]
	if r.Err == nil || r.Passed || r.ExitCode != -1 {
		t.Errorf("err %v, passed %v, exit %d; want an error, false, -1", r.Err, r.Passed, r.ExitCode)
	}
	if !strings.HasPrefix(progress.String(), "check test: error: run check test: ") {
		t.Errorf("progress = %q, want an error line", progress.String())
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := options(t)
	o.Parallel = 1
	cs := []Check{
		// The trap's exit code proves the check got SIGINT; nothing is
		// forked after the marker file, so the SIGINT cannot be missed.
		{Name: "running", Run: "trap 'exit 42' INT; sleep 100 & touch started; wait"},
		{Name: "queued", Run: "echo should not run"},
	}
	go cancelOnceThere(cancel, filepath.Join(o.Dir, "started"))
	rs := Run(ctx, cs, o)
	if r := rs[0]; r.ExitCode != 42 || r.Passed {
		t.Errorf("running check: exit %d, passed %v; want 42 (its SIGINT trap), false", r.ExitCode, r.Passed)
	}
	if r := rs[1]; !errors.Is(r.Err, context.Canceled) || r.Passed || r.ExitCode != -1 || r.Output != "" {
		t.Errorf("queued check: %+v; want never run, with a cancellation error", r)
	}
}

func TestNone(t *testing.T) {
	if rs := Run(context.Background(), nil, options(t)); len(rs) != 0 {
		t.Errorf("Run(nil) = %v, want no results", rs)
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name     string
		out      string
		maxLines int
		want     string
	}{
		{"empty", "", 5, ""},
		{"short", "a\nb\n", 5, "a\nb"},
		{"last lines", "1\n2\n3\n4\n5\n", 2, "4\n5"},
		{"trailing blank lines dropped", "1\n2\n3\n\n  \n\n", 2, "2\n3"},
		{"inner blank lines kept", "1\n\n3\n", 3, "1\n\n3"},
		{"crlf", "a\r\nb\r\n", 5, "a\nb"},
		{"redrawn line", "building 10%\rbuilding 50%\rbuilding 100%\nFAIL: TestCart\n", 5, "building 100%\nFAIL: TestCart"},
		{"redrawn lines count once", "1\r2\r3\n4\r5\n", 1, "5"},
		{"carriage return at the end", "a\rdone\r", 5, "done"},
		{"carriage return before crlf", "a\r\r\nb\r\n", 5, "a\nb"},
		{"line cleared and redrawn", "\x1b[2K\r 50%\x1b[2K\r100%\nok\n", 5, "100%\nok"},
		{"redrawn blank", "FAIL\nworking\r       \r\n", 5, "FAIL"},
		{"only carriage returns", "\r\r\n\r", 5, ""},
		{"cut after redrawing", strings.Repeat("z", 300) + "\rshort\n", 1, "short"},
		{"no newline at end", "a\nb", 1, "b"},
		{"long line cut", "ok\n" + long + "\n", 2, "ok\n" + strings.Repeat("x", 197) + "…"},
		{"exactly 200 bytes kept", strings.Repeat("y", 200), 1, strings.Repeat("y", 200)},
		{"zero lines", "a\n", 0, ""},
		{"only blank", "\n\n", 3, ""},
		{"colours left out", "\x1b[31m✕ adds\x1b[0m\n\x1b[2J\x1b[H\x1b[1mTests:\x1b[22m \x1b[31m1 failed\x1b[39m, 1 total\n\x1b[0m\n", 5, "✕ adds\nTests: 1 failed, 1 total"},
	}
	for _, tt := range tests {
		if got := Excerpt(tt.out, tt.maxLines); got != tt.want {
			t.Errorf("%s: Excerpt(%q, %d) = %q, want %q", tt.name, tt.out, tt.maxLines, got, tt.want)
		}
	}
}

func TestResultExcerpt(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{"output shown", Result{ExitCode: 1, Output: "FAIL: TestCart\n"}, "FAIL: TestCart"},
		{"no output", Result{ExitCode: 3}, "(exited 3, no output)"},
		{"blank output", Result{ExitCode: 4, Output: "\n  \n\x1b[0m\n"}, "(exited 4, blank output)"},
		{"timed out", Result{ExitCode: 130, TimedOut: true}, "(no output)"},
		{"passed", Result{Passed: true}, ""},
		{"could not start", Result{ExitCode: -1, Err: errors.New("no sh")}, ""},
		{"stopped", Result{ExitCode: 130, Stopped: true}, ""},
	}
	for _, tt := range tests {
		if got := tt.r.Excerpt(5); got != tt.want {
			t.Errorf("%s: Excerpt(5) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := (Result{ExitCode: 3}).Excerpt(0); got != "" {
		t.Errorf("Excerpt(0) = %q, want none", got)
	}
}

func TestExcerptRunes(t *testing.T) {
	got := Excerpt(strings.Repeat("€", 100), 1) // 300 bytes
	if len(got) > 200 || !strings.HasSuffix(got, "€…") {
		t.Errorf("Excerpt = %q (%d bytes), want at most 200 bytes, cut between runes", got, len(got))
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestWorkPath(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "proj")
	for _, d := range []string{"proj/node_modules/.bin", "proj2/bin", "tools"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A link to the work directory, and one to a directory in it.
	if err := os.Symlink(work, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(work, "node_modules"), filepath.Join(root, "tools", "nm")); err != nil {
		t.Fatal(err)
	}
	in := func(p string) string { return filepath.Join(root, p) }
	tests := []struct {
		env  []string
		want []string
	}{
		{[]string{"HOME=/home/a", "PATH=/usr/bin:/bin"}, nil},
		{[]string{"PATH=./node_modules/.bin:/usr/bin:bin"}, []string{"./node_modules/.bin", "bin"}},
		{[]string{"PATH=/usr/bin:"}, []string{""}},
		{[]string{"PATH=:/usr/bin::/bin"}, []string{""}},
		{[]string{"PATH=~/bin:bin:/bin:bin"}, []string{"~/bin", "bin"}},
		{[]string{"PATH=/bin", "PATH=.:/bin"}, []string{"."}},
		{[]string{"MYPATH=bin"}, nil},
		// Absolute, in the work directory: as written, not clean, through
		// a link, and not there yet.
		{[]string{"PATH=" + in("proj/node_modules/.bin") + ":/usr/bin"}, []string{in("proj/node_modules/.bin")}},
		{[]string{"PATH=/usr/bin:" + in("proj")}, []string{in("proj")}},
		{[]string{"PATH=" + in("proj2/../proj/bin/") + ":" + in("proj2/bin")}, []string{in("proj2/../proj/bin/")}},
		{[]string{"PATH=" + in("link/node_modules/.bin") + ":" + in("tools/nm/.bin") + ":" + in("tools")}, []string{in("link/node_modules/.bin"), in("tools/nm/.bin")}},
		{[]string{"PATH=" + in("link/new/bin") + ":" + in("tools/nm/new")}, []string{in("link/new/bin"), in("tools/nm/new")}},
		// Beside it, or above it, the agent does not write.
		{[]string{"PATH=" + in("proj2/bin") + ":" + root + ":" + in("tools")}, nil},
	}
	for _, tt := range tests {
		if got := WorkPath(tt.env, work); !slices.Equal(got, tt.want) {
			t.Errorf("WorkPath(%q, %q) = %q, want %q", tt.env, work, got, tt.want)
		}
	}
}

// TestWithoutWorkPath runs checks with programs of the agent's where a
// directory of $PATH that is relative or in the work directory would find
// them: in ./bin, in node_modules/.bin by its absolute path, and in the
// work directory itself (an empty entry, or its absolute path). The checks
// do not find them.
func TestWithoutWorkPath(t *testing.T) {
	o := options(t)
	for _, name := range []string{"bin/tool", "tool", "node_modules/.bin/tool"} {
		path := filepath.Join(o.Dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho the agent's\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const run = `command -v tool || echo none; echo "$PATH"`
	tests := []struct{ path, want string }{
		{"bin:/usr/bin:/bin", "none\n/usr/bin:/bin\n"},
		{"/usr/bin::/bin", "none\n/usr/bin:/bin\n"},
		{"/usr/bin:/bin:", "none\n/usr/bin:/bin\n"},
		{"/usr/bin:/bin", "none\n/usr/bin:/bin\n"},
		{filepath.Join(o.Dir, "node_modules/.bin") + ":/usr/bin:/bin", "none\n/usr/bin:/bin\n"},
		{"/usr/bin:" + o.Dir + ":/bin", "none\n/usr/bin:/bin\n"},
	}
	for _, tt := range tests {
		o.Env = []string{"PATH=" + tt.path}
		r := Run(context.Background(), []Check{{Name: "path", Run: run}}, o)[0]
		if r.Output != tt.want {
			t.Errorf("PATH=%s: Output = %q, want %q", tt.path, r.Output, tt.want)
		}
	}
	// Left with no directory, $PATH is left out, and sh searches its own
	// default: an empty one would be the work directory.
	o.Env = []string{"PATH=bin:"}
	r := Run(context.Background(), []Check{{Name: "path", Run: `command -v tool || echo none`}}, o)[0]
	if r.Output != "none\n" {
		t.Errorf("PATH=bin: Output = %q, want %q", r.Output, "none\n")
	}
}

// TestLookPath: a program ralph runs itself is found only in the
// directories of $PATH that the agent cannot write.
func TestLookPath(t *testing.T) {
	work, outside := t.TempDir(), t.TempDir()
	for _, path := range []string{
		filepath.Join(work, "bin/tool"),
		filepath.Join(work, "tool"),
		filepath.Join(outside, "tool"),
		filepath.Join(outside, "plain/tool"),
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Not executable: looked past, as exec.LookPath does.
	if err := os.Chmod(filepath.Join(outside, "plain/tool"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	tests := []struct{ path, want string }{
		{filepath.Join(work, "bin") + ":" + outside, filepath.Join(outside, "tool")},
		{"bin:" + work + "::" + outside, filepath.Join(outside, "tool")},
		{filepath.Join(outside, "plain") + ":" + outside, filepath.Join(outside, "tool")},
		{filepath.Join(work, "bin"), ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Setenv("PATH", tt.path)
		got, err := LookPath("tool", work)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("PATH=%s: LookPath = %q, %v; want %q", tt.path, got, err, tt.want)
		}
		if err != nil && !errors.Is(err, exec.ErrNotFound) {
			t.Errorf("PATH=%s: error %v is not exec.ErrNotFound", tt.path, err)
		}
	}
}

// readLog returns the lines the checks appended to the file log in dir.
func readLog(tb testing.TB, dir string) []string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Fields(string(b))
}

// TestAfterWaits runs a check listed before the one it waits for: it
// starts only once that one has ended, as their log shows.
func TestAfterWaits(t *testing.T) {
	for _, parallel := range []int{0, 1} {
		t.Run(fmt.Sprintf("parallel %d", parallel), func(t *testing.T) {
			o := options(t)
			o.Parallel = parallel
			cs := []Check{
				{Name: "selftest", Run: "echo selftest >> log", After: []string{"build"}, Required: true},
				{Name: "build", Run: "echo build-start >> log; sleep 0.2; echo build-end >> log", Required: true},
			}
			for _, r := range Run(context.Background(), cs, o) {
				if !r.Passed {
					t.Errorf("check %s: %s", r.Name, r.Verdict())
				}
			}
			if got, want := readLog(t, o.Dir), []string{"build-start", "build-end", "selftest"}; !slices.Equal(got, want) {
				t.Errorf("log = %q, want %q", got, want)
			}
		})
	}
}

// TestAfterFailed fails, without running them, the checks that wait for
// one that did not pass, and those that wait for them in turn, whether or
// not the one they waited for was required.
func TestAfterFailed(t *testing.T) {
	o := options(t)
	var progress syncBuffer
	o.Done = func(_ int, r Result) { fmt.Fprintln(&progress, r.Summary()) }
	cs := []Check{
		{Name: "build", Run: "exit 1"},
		{Name: "selftest", Run: "touch selftest-ran", After: []string{"build"}, Required: true},
		{Name: "deploy", Run: "touch deploy-ran", After: []string{"selftest"}},
		{Name: "slow", Run: "exec sleep 100", Timeout: 50 * time.Millisecond, Required: true},
		{Name: "bench", Run: "touch bench-ran", After: []string{"slow"}, Required: true},
		{Name: "lint", Run: "true", Required: true},
	}
	rs := Run(context.Background(), cs, o)
	want := map[string]string{
		"selftest": "not run: build failed",
		"deploy":   "not run: selftest was not run, optional",
		"bench":    "not run: slow timed out",
	}
	for _, r := range rs {
		w, ok := want[r.Name]
		if !ok {
			continue
		}
		if r.Passed || !r.NotRun || r.Stopped || r.ExitCode != -1 || r.Verdict() != w {
			t.Errorf("check %s: passed %v, not run %v, stopped %v, exit %d, verdict %q; want not run: %q", r.Name, r.Passed, r.NotRun, r.Stopped, r.ExitCode, r.Verdict(), w)
		}
		if _, err := os.Stat(filepath.Join(o.Dir, r.Name+"-ran")); err == nil {
			t.Errorf("check %s ran", r.Name)
		}
	}
	if !rs[5].Passed {
		t.Errorf("lint: %s; want pass", rs[5].Verdict())
	}
	if got := progress.String(); !strings.Contains(got, "check selftest: not run: build failed\n") || strings.Count(got, "\n") != len(cs) {
		t.Errorf("progress:\n%s\nwant a line per check, with \"check selftest: not run: build failed\"", got)
	}
}

// TestAfterOverlap proves without timing that the checks that wait for
// nothing run together with those that wait: lint runs from before build
// starts to after selftest, which waits for build, has run.
func TestAfterOverlap(t *testing.T) {
	const until = `i=0; until [ -e %s ]; do i=$((i+1)); [ $i -gt 500 ] && exit 1; sleep 0.01; done`
	cs := []Check{
		{Name: "lint", Run: "touch lint-started; " + fmt.Sprintf(until, "selftest-ran"), Required: true},
		{Name: "build", Run: fmt.Sprintf(until, "lint-started") + "; touch built", Required: true},
		{Name: "selftest", Run: "test -e built && touch selftest-ran", After: []string{"build"}, Required: true},
	}
	for _, r := range Run(context.Background(), cs, options(t)) {
		if !r.Passed {
			t.Errorf("check %s: %s", r.Name, r.Verdict())
		}
	}
}

// TestAfterCircle runs none of the checks that wait for each other, and
// the rest as usual.
func TestAfterCircle(t *testing.T) {
	cs := []Check{
		{Name: "a", Run: "true", After: []string{"b"}},
		{Name: "b", Run: "true", After: []string{"a"}},
		{Name: "c", Run: "true", After: []string{"missing"}},
	}
	rs := Run(context.Background(), cs, options(t))
	for _, r := range rs[:2] {
		if r.Passed || !r.NotRun {
			t.Errorf("check %s: %s; want not run", r.Name, r.Verdict())
		}
	}
	if !rs[2].Passed {
		t.Errorf("check c: %s; want pass (a name not in cs is left out)", rs[2].Verdict())
	}
}

// TestAfterCancel stops, not fails, a check whose prerequisite an
// interrupt stopped.
func TestAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := options(t)
	cs := []Check{
		{Name: "build", Run: "trap 'exit 42' INT; sleep 100 & touch started; wait"},
		{Name: "selftest", Run: "touch selftest-ran", After: []string{"build"}},
	}
	go cancelOnceThere(cancel, filepath.Join(o.Dir, "started"))
	rs := Run(ctx, cs, o)
	if r := rs[1]; !r.Stopped || r.NotRun || !errors.Is(r.Err, context.Canceled) {
		t.Errorf("selftest: stopped %v, not run %v, err %v; want stopped by the cancellation", r.Stopped, r.NotRun, r.Err)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, "selftest-ran")); err == nil {
		t.Error("selftest ran")
	}
}
