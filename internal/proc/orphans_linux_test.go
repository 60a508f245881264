package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestKillOrphans: a child's child that left its group (setsid) is handed
// to this process once the child exits, and killed; one that already
// exited is reaped, so that the next look finds no child and reads no
// /proc at all.
func TestKillOrphans(t *testing.T) {
	if err := Adopt(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	escaped := filepath.Join(dir, "escaped")
	// One stray sleeps on; the other exits at once and is left a zombie.
	script := `setsid sh -c 'touch escaped; exec sleep 100' </dev/null >/dev/null 2>&1 &
setsid true </dev/null >/dev/null 2>&1 &
while ! test -f escaped; do sleep 0.01; done`
	p, err := Start(context.Background(), Config{Argv: []string{"sh", "-c", script}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if code := p.Wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	time.Sleep(50 * time.Millisecond) // the short one is gone by now
	n, left, err := KillOrphans()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || left != 0 {
		t.Errorf("killed %d, %d left running; want 1 (the sleeping stray; the other was reaped), none left", n, left)
	}
	if hasChildren() {
		t.Error("a child is left after KillOrphans")
	}
	if _, err := os.Stat(escaped); err != nil {
		t.Fatalf("the stray never ran: %v", err)
	}
}

// tracerHold is how long each of TestKillOrphansTraced's orphans holds
// the other once it is killed, far longer than KillOrphans may take.
const tracerHold = 30 * time.Second

// TestKillOrphansTraced: a killed process that another traces is reported
// to its tracer first, and cannot be reaped until the tracer lets it go,
// which an orphan left to run does when it pleases (here, when it exits
// after tracerHold). Of two orphans that trace each other, whichever is
// killed first is held so; both are killed before either is waited for,
// and KillOrphans returns at once with both gone.
func TestKillOrphansTraced(t *testing.T) {
	if err := Adopt(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := start(t, Config{
		Argv: []string{os.Args[0], "-test.run=^TestHelperTracers$"},
		Env:  append(os.Environ(), "PROC_TEST_TRACERS="+dir),
	})
	if code := wait(t, p); code != 0 {
		t.Fatalf("helper exit %d", code)
	}
	var pids []int
	for _, name := range []string{"a", "b"} {
		pids = append(pids, readPid(t, filepath.Join(dir, name+".pid")))
	}
	for _, name := range []string{"a", "b"} {
		if got := readLine(t, filepath.Join(dir, name+".seized")); got != "ok" {
			KillOrphans()
			t.Skipf("a process may not trace another here: %s", got)
		}
	}
	begin := time.Now()
	n, left, err := KillOrphans()
	took := time.Since(begin)
	if err != nil {
		t.Fatal(err)
	}
	if took >= tracerHold/2 {
		t.Errorf("KillOrphans took %v: it waited for a tracer to let go", took.Round(time.Second))
	}
	if n != 2 || left != 0 {
		t.Errorf("killed %d, %d left running; want 2, none left", n, left)
	}
	for _, pid := range pids {
		if exists(pid) {
			t.Errorf("orphan %d is still there", pid)
		}
	}
	if hasChildren() {
		t.Error("a child is left after KillOrphans")
	}
}

// TestHelperTracers is not a test: TestKillOrphansTraced runs the test
// binary with PROC_TEST_TRACERS set to a directory, to start two processes
// out of its group, a and b, and exit. Each is the test binary again, with
// PROC_TEST_TRACER set to its name: it writes its pid to NAME.pid in the
// directory, traces the other, writes "ok" (or why it could not) to
// NAME.seized and holds the other, never reaping it, for tracerHold.
func TestHelperTracers(t *testing.T) {
	dir := os.Getenv("PROC_TEST_TRACERS")
	if dir == "" {
		t.Skip("a helper process for TestKillOrphansTraced")
	}
	name := os.Getenv("PROC_TEST_TRACER")
	if name == "" {
		for _, name := range []string{"a", "b"} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTracers$")
			// A traced process stops at each signal it receives until its
			// tracer lets it go on, which neither does: Go's preemption
			// signals would stop each before it traced the other.
			cmd.Env = append(os.Environ(), "PROC_TEST_TRACER="+name, "GODEBUG=asyncpreemptoff=1")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	// Where Yama's ptrace_scope is 1, only an ancestor may trace a process
	// unless it allows others; without Yama this fails, harmlessly.
	const prSetPtracer, prSetPtracerAny = 0x59616d61, ^uintptr(0)
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetPtracer, prSetPtracerAny, 0)
	if err := os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := "b"
	if name == "b" {
		other = "a"
	}
	peer := readPid(t, filepath.Join(dir, other+".pid"))
	// The tracer is this thread, not the process: it must not end.
	runtime.LockOSThread()
	const ptraceSeize = 0x4206 // traces without stopping the tracee
	seized := "ok"
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PTRACE, ptraceSeize, uintptr(peer), 0, 0, 0, 0); errno != 0 {
		seized = errno.Error()
	}
	if err := os.WriteFile(filepath.Join(dir, name+".seized"), []byte(seized+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(tracerHold)
}

// TestReapGroup: a member of a child's group, handed over when its parent
// exited and killed with the group, stays in the group as a zombie until
// reaped: KillOrphans would wait out its second for the group to empty.
func TestReapGroup(t *testing.T) {
	if err := Adopt(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := Start(context.Background(), Config{Argv: []string{"sh", "-c", "sleep 100 & echo $! >member"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pgid := p.cmd.Process.Pid
	if code := p.Wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	data, err := os.ReadFile(filepath.Join(dir, "member"))
	if err != nil {
		t.Fatal(err)
	}
	member, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if st, err := readStat(member); err == nil && st.state == 'Z' {
			break
		}
		if i == 1000 {
			t.Fatalf("the group's member %d never became a zombie", member)
		}
		time.Sleep(time.Millisecond)
	}
	if !groupExists(pgid) {
		t.Fatal("the group is empty with a zombie in it")
	}
	reapGroup(pgid)
	if groupExists(pgid) {
		t.Error("the group still exists after reapGroup")
	}
	takeStarted() // nothing is left for KillOrphans to wait for
}

// TestEscapedHolderDoesNotBlock: a child's child that left its group
// (setsid) and holds its output pipe open outlives the kill of the group;
// the child is done with once the grace period after its exit is over,
// with what it printed, rather than when the stray closes the pipe.
func TestEscapedHolderDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	var out syncBuffer
	script := `setsid sh -c 'echo $$ >stray; exec sleep 100' </dev/null &
while ! test -s stray; do sleep 0.01; done
echo done`
	p := start(t, Config{Argv: []string{"sh", "-c", script}, Dir: dir, Stdout: &out, Grace: 100 * time.Millisecond})
	if code := wait(t, p); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	if got := out.String(); got != "done\n" {
		t.Errorf("stdout = %q, want %q", got, "done\n")
	}
	pid := readPid(t, filepath.Join(dir, "stray"))
	if !alive(pid) {
		t.Fatalf("the stray %d is gone: nothing held the pipe", pid)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	waitGone(t, pid)
}

// heldWriter holds its first write until released, as a slow terminal
// would: meanwhile the child's output waits in the pipe.
type heldWriter struct {
	syncBuffer
	release chan struct{}
	once    sync.Once
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { <-w.release })
	return w.syncBuffer.Write(p)
}

// TestLateOutput: what a child's child that left its group (setsid) writes
// to the child's stdout or stderr after the child exited goes to
// LateStdout or LateStderr; what the child wrote before it exited goes to
// Stdout and Stderr whole, even what was still in the pipe, unread, when
// it exited. The stray writes once the test says so, after the exit.
func TestLateOutput(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { os.WriteFile(filepath.Join(dir, "go"), nil, 0o666) })
	// 60000 bytes fit in a pipe of the default size, should it not have
	// grown.
	script := `setsid sh -c 'touch escaped; while ! test -f go; do sleep 0.01; done; echo late; echo late2 >&2; echo >wrote' </dev/null &
while ! test -f escaped; do sleep 0.01; done
echo first; head -c 60000 /dev/zero | tr '\0' x; echo; echo err >&2`
	stdout := &heldWriter{release: make(chan struct{})}
	var stderr, lateOut, lateErr syncBuffer
	p := start(t, Config{Argv: []string{"sh", "-c", script}, Dir: dir,
		Stdout: stdout, Stderr: &stderr, LateStdout: &lateOut, LateStderr: &lateErr, Grace: patience})
	select {
	case <-p.Exited():
	case <-time.After(patience):
		close(stdout.release)
		t.Fatal("the child never exited")
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	readLine(t, filepath.Join(dir, "wrote"))
	close(stdout.release)
	if code := wait(t, p); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	if got, want := stdout.String(), "first\n"+strings.Repeat("x", 60000)+"\n"; got != want {
		t.Errorf("stdout = %d bytes, %q…; want %d bytes, %q…", len(got), got[:min(len(got), 20)], len(want), want[:20])
	}
	if got := stderr.String(); got != "err\n" {
		t.Errorf("stderr = %q, want %q", got, "err\n")
	}
	if got := lateOut.String(); got != "late\n" {
		t.Errorf("late stdout = %q, want %q", got, "late\n")
	}
	if got := lateErr.String(); got != "late2\n" {
		t.Errorf("late stderr = %q, want %q", got, "late2\n")
	}
}

// TestLateOutputSlowReader: a reader of the output slower than the grace
// period (a paused pager) costs the child none of what it wrote before it
// exited, its last line included: reading ends at the cut, not at the
// grace period's end.
func TestLateOutputSlowReader(t *testing.T) {
	const grace = 100 * time.Millisecond
	// 60000 bytes fit in a pipe of the default size: the child exits
	// while its output still waits there.
	script := `echo first; head -c 60000 /dev/zero | tr '\0' x; echo; echo last`
	stdout := &heldWriter{release: make(chan struct{})}
	var lateOut syncBuffer
	p := start(t, Config{Argv: []string{"sh", "-c", script},
		Stdout: stdout, LateStdout: &lateOut, Grace: grace})
	select {
	case <-p.Exited():
	case <-time.After(patience):
		close(stdout.release)
		t.Fatal("the child never exited")
	}
	// Held past the grace period: the old reading stopped there.
	time.Sleep(5 * grace)
	close(stdout.release)
	if code := wait(t, p); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	if got, want := stdout.String(), "first\n"+strings.Repeat("x", 60000)+"\nlast\n"; got != want {
		t.Errorf("stdout = %d bytes, ending %q; want %d bytes, ending %q", len(got), got[max(0, len(got)-10):], len(want), want[len(want)-10:])
	}
	if got := lateOut.String(); got != "" {
		t.Errorf("late stdout = %q, want none", got)
	}
}
