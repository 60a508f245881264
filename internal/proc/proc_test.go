package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testGrace is short so that SIGKILL fallbacks keep the tests fast.
const testGrace = 100 * time.Millisecond

// patience bounds every wait in these tests, so a regression fails instead of
// hanging; it is never what a test measures.
const patience = 20 * time.Second

// syncBuffer is a bytes.Buffer safe for the concurrent writes of stdout and
// stderr, which can report when some text has arrived.
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

// waitFor waits until the buffer contains s.
func (b *syncBuffer) waitFor(tb testing.TB, s string) {
	tb.Helper()
	deadline := time.Now().Add(patience)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			tb.Fatalf("output never contained %q; got %q", s, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func start(tb testing.TB, c Config) *Process {
	tb.Helper()
	if c.Grace == 0 {
		c.Grace = testGrace
	}
	p, err := Start(context.Background(), c)
	if err != nil {
		tb.Fatalf("Start(%q): %v", c.Argv, err)
	}
	tb.Cleanup(func() {
		p.Stop()
		p.Wait()
	})
	return p
}

// wait waits for p, failing instead of hanging.
func wait(tb testing.TB, p *Process) int {
	tb.Helper()
	select {
	case <-p.Done():
		return p.Wait()
	case <-time.After(patience):
		tb.Fatalf("process %d still running after %v", p.Pid(), patience)
		return 0
	}
}

// alive reports whether pid is a live process. A zombie counts as dead: it
// only waits for its (new) parent to reap it.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitGone waits until pid is no longer alive; a reparented child is reaped
// by init shortly after it is killed, not at once.
func waitGone(tb testing.TB, pid int) {
	tb.Helper()
	deadline := time.Now().Add(patience)
	for alive(pid) {
		if time.Now().After(deadline) {
			tb.Fatalf("process %d still alive", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readPid waits for a pid written to file by a test script.
func readPid(tb testing.TB, file string) int {
	tb.Helper()
	pid, err := strconv.Atoi(readLine(tb, file))
	if err != nil {
		tb.Fatalf("pid file %s: %v", file, err)
	}
	return pid
}

// readLine waits for a line written to file by a test script or helper
// process, and returns it without its newline.
func readLine(tb testing.TB, file string) string {
	tb.Helper()
	deadline := time.Now().Add(patience)
	for {
		b, err := os.ReadFile(file)
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s never written", file)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStopKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "bg.pid")
	var out syncBuffer
	p := start(t, Config{
		Argv:   []string{"sh", "-c", `sleep 100 & echo $! > "$1"; echo ready; exec sleep 100`, "sh", pidFile},
		Stdout: &out,
	})
	bg := readPid(t, pidFile)
	out.waitFor(t, "ready")
	if !alive(bg) {
		t.Fatalf("background child %d not running before Stop", bg)
	}
	p.Stop()
	code := wait(t, p)
	// sleep dies of the SIGINT; a non-interactive shell's background job
	// ignores SIGINT, so only the group kill can end it.
	if code != 128+int(syscall.SIGINT) {
		t.Errorf("exit code = %d, want %d", code, 128+int(syscall.SIGINT))
	}
	waitGone(t, p.Pid())
	waitGone(t, bg)
}

func TestLeftoverChildDoesNotBlock(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "bg.pid")
	var out syncBuffer
	// The background sleep inherits stdout and would keep the pipe open for
	// 100s if it were not killed when the leader exits.
	p := start(t, Config{
		Argv:   []string{"sh", "-c", `sleep 100 & echo $! > "$1"; echo done; exit 3`, "sh", pidFile},
		Stdout: &out,
	})
	code := wait(t, p)
	if code != 3 {
		t.Errorf("exit code = %d, want 3", code)
	}
	if got := out.String(); got != "done\n" {
		t.Errorf("stdout = %q, want %q", got, "done\n")
	}
	waitGone(t, readPid(t, pidFile))
}

func TestInterruptThenKill(t *testing.T) {
	var out syncBuffer
	// The shell traps SIGINT and carries on: only SIGKILL ends it. A
	// trapped signal interrupts wait, and nothing is forked after "ready",
	// so the SIGINT cannot fall into a fork and be missed. (The background
	// sleep ignores SIGINT, as asynchronous commands of a script do.)
	p := start(t, Config{
		Argv:   []string{"sh", "-c", `trap 'echo got INT' INT; sleep 100 & echo ready; while :; do wait; done`},
		Stdout: &out,
	})
	out.waitFor(t, "ready")
	p.Stop()
	code := wait(t, p)
	if code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit code = %d, want %d (SIGKILL)", code, 128+int(syscall.SIGKILL))
	}
	if !strings.Contains(out.String(), "got INT") {
		t.Errorf("stdout = %q; want the trap's output, proving SIGINT came first", out.String())
	}
}

func TestIgnoredInterrupt(t *testing.T) {
	var out syncBuffer
	p := start(t, Config{
		Argv:   []string{"sh", "-c", `trap '' INT; echo ready; sleep 100`},
		Stdout: &out,
	})
	out.waitFor(t, "ready")
	p.Stop()
	if code := wait(t, p); code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit code = %d, want %d", code, 128+int(syscall.SIGKILL))
	}
	waitGone(t, p.Pid())
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"exit 255", 255},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
		{"kill -KILL $$", 128 + int(syscall.SIGKILL)},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			p := start(t, Config{Argv: []string{"sh", "-c", tt.script}})
			if got := wait(t, p); got != tt.want {
				t.Errorf("exit code = %d, want %d", got, tt.want)
			}
			if err := p.Err(); err != nil {
				t.Errorf("Err() = %v, want nil", err)
			}
		})
	}
}

func TestStdio(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		stdin    string
		combined bool
		stdout   string
		stderr   string
	}{
		{"stdin copied", "cat", "the prompt", false, "the prompt", ""},
		// More than a pipe holds is copied while the child reads it.
		{"stdin larger than a pipe", "cat", strings.Repeat("prompt\n", 3<<20/7), false, strings.Repeat("prompt\n", 3<<20/7), ""},
		{"stdin nil is /dev/null", "cat; echo eof", "", false, "eof\n", ""},
		{"separate streams", "echo a; echo b >&2; echo c", "", false, "a\nc\n", "b\n"},
		{"combined keeps order", "echo a; echo b >&2; echo c; echo d >&2", "", true, "a\nb\nc\nd\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			c := Config{Argv: []string{"sh", "-c", tt.script}, Stdout: &stdout, Stderr: &stderr}
			if tt.combined {
				c.Stderr = &stdout
			}
			if tt.stdin != "" {
				c.Stdin = strings.NewReader(tt.stdin)
			}
			p := start(t, c)
			if code := wait(t, p); code != 0 {
				t.Errorf("exit code = %d, want 0", code)
			}
			if got := stdout.String(); got != tt.stdout {
				t.Errorf("stdout = %q, want %q", got, tt.stdout)
			}
			if got := stderr.String(); got != tt.stderr {
				t.Errorf("stderr = %q, want %q", got, tt.stderr)
			}
		})
	}
}

// TestUnreadStdin: a child that never reads its stdin must not leave ralph
// blocked on writing it, whether it was written before the child started
// (it fits in the pipe) or is copied while the child runs (far beyond a
// pipe's buffer, grown or not).
func TestUnreadStdin(t *testing.T) {
	for _, size := range []int{100, 64<<10 + 3, 1<<20 - 1, 1 << 20, 4 << 20} {
		p := start(t, Config{Argv: []string{"sh", "-c", "exit 0"}, Stdin: strings.NewReader(strings.Repeat("x", size))})
		if code := wait(t, p); code != 0 {
			t.Errorf("%d bytes: exit code = %d, want 0", size, code)
		}
	}
}

// TestStdinSizes: stdin reaches the child whole at the sizes around the
// pipe's, written before it starts or while it runs.
func TestStdinSizes(t *testing.T) {
	for _, size := range []int{0, 64 << 10, 64<<10 + 3, 1<<20 - 1, 1 << 20, 1<<20 + 1} {
		in := strings.Repeat("y", size)
		var out syncBuffer
		p := start(t, Config{Argv: []string{"sh", "-c", "wc -c"}, Stdin: strings.NewReader(in), Stdout: &out})
		if code := wait(t, p); code != 0 {
			t.Errorf("%d bytes: exit code = %d, want 0", size, code)
		}
		if got := strings.TrimSpace(out.String()); got != strconv.Itoa(size) {
			t.Errorf("%d bytes in, the child read %s", size, got)
		}
	}
}

func TestDirEnv(t *testing.T) {
	dir := t.TempDir()
	var out syncBuffer
	p := start(t, Config{
		Argv:   []string{"sh", "-c", `pwd; echo "$RALPH_TEST_VAR"`},
		Dir:    dir,
		Env:    []string{"RALPH_TEST_VAR=hello", "PATH=" + os.Getenv("PATH")},
		Stdout: &out,
	})
	wait(t, p)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), real+"\nhello\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
}

func TestFailingWriterStillDrains(t *testing.T) {
	// The child writes far more than a pipe holds; if ralph stopped reading
	// when the writer failed, the child would block forever.
	p := start(t, Config{
		Argv:   []string{"sh", "-c", "head -c 1000000 /dev/zero; echo ok >&2"},
		Stdout: failWriter{},
		Stderr: &syncBuffer{},
	})
	if code := wait(t, p); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken") }

func TestContextCancelStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	p, err := Start(ctx, Config{Argv: []string{"sh", "-c", "echo ready; exec sleep 100"}, Stdout: &out, Grace: testGrace})
	if err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "ready")
	cancel()
	if code := wait(t, p); code != 128+int(syscall.SIGINT) {
		t.Errorf("exit code = %d, want %d", code, 128+int(syscall.SIGINT))
	}
}

func TestStopAfterExit(t *testing.T) {
	p := start(t, Config{Argv: []string{"true"}})
	if code := wait(t, p); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	p.Stop()
	p.Stop()
	if code := p.Wait(); code != 0 {
		t.Errorf("exit code after Stop = %d, want 0", code)
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		c    Config
		want string
	}{
		{"empty", context.Background(), Config{}, "empty command"},
		{"no program", context.Background(), Config{Argv: []string{"ralph-no-such-program"}}, "executable file not found"},
		{"no dir", context.Background(), Config{Argv: []string{"true"}, Dir: filepath.Join(dir, "missing")}, "no such file"},
		{"dir is a file", context.Background(), Config{Argv: []string{"true"}, Dir: file}, "not a directory"},
		{"cancelled", cancelled, Config{Argv: []string{"true"}}, "canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(tt.ctx, tt.c)
			if err == nil {
				p.Wait()
				t.Fatalf("Start succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestSameWriter(t *testing.T) {
	a, b := &syncBuffer{}, &syncBuffer{}
	tests := []struct {
		name string
		x, y interface{ Write([]byte) (int, error) }
		want bool
	}{
		{"same pointer", a, a, true},
		{"different pointers", a, b, false},
		{"nil", a, nil, false},
		{"uncomparable", sliceWriter{}, sliceWriter{}, false},
	}
	for _, tt := range tests {
		if got := sameWriter(tt.x, tt.y); got != tt.want {
			t.Errorf("%s: sameWriter = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// sliceWriter has a dynamic type that == would panic on.
type sliceWriter []byte

func (sliceWriter) Write(p []byte) (int, error) { return len(p), nil }

// A child sees its own directory as $PWD, not ralph's: some programs trust
// $PWD over their working directory.
func TestPWD(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	p, err := Start(context.Background(), Config{
		Argv:   []string{"printenv", "PWD"},
		Dir:    dir,
		Env:    []string{"PWD=/somewhere/else", "PATH=" + os.Getenv("PATH")},
		Stdout: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
	if strings.TrimSpace(out.String()) != dir {
		t.Errorf("$PWD = %q, want %q", out.String(), dir)
	}
}
