package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestHelperParent is not a test: TestDeathSignal runs the test binary with
// PROC_TEST_PARENT set to act as a ralph that starts a child and is then
// killed.
func TestHelperParent(t *testing.T) {
	pidFile := os.Getenv("PROC_TEST_PARENT")
	if pidFile == "" {
		t.Skip("a helper process for TestDeathSignal")
	}
	p, err := Start(context.Background(), Config{
		Argv: []string{"sh", "-c", `echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 100`, "sh", pidFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
}

// TestDeathSignal: a child's leader does not outlive a ralph killed with
// SIGKILL, which can run no clean-up of its own.
func TestDeathSignal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	parent := exec.Command(os.Args[0], "-test.run=^TestHelperParent$")
	parent.Env = append(os.Environ(), "PROC_TEST_PARENT="+pidFile)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	child := readPid(t, pidFile)
	if !alive(child) {
		t.Fatalf("child %d not running", child)
	}
	parent.Process.Kill()
	parent.Wait()
	waitGone(t, child)
}

// TestDeathSignalNotEarly: threads that end under ralph while its child runs
// do not take the child with them; only the end of ralph does.
func TestDeathSignalNotEarly(t *testing.T) {
	p := start(t, Config{Argv: []string{"sleep", "100"}})
	defer p.Stop()
	// A goroutine that returns while locked to its thread ends the thread.
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { runtime.LockOSThread() })
	}
	wg.Wait()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-p.Done():
		t.Fatalf("the child died with a thread of its parent: exit %d", p.Wait())
	default:
	}
	if !alive(p.Pid()) {
		t.Fatalf("child %d is gone", p.Pid())
	}
}

// TestSpawnHoldsThread: the goroutine that starts a child holds its thread
// while the child lives, and lets it go once the child has been waited
// for: nothing is left behind.
func TestSpawnHoldsThread(t *testing.T) {
	before := runtime.NumGoroutine()
	p := start(t, Config{Argv: []string{"sleep", "100"}})
	p.Stop()
	wait(t, p)
	deadline := time.Now().Add(patience)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after the child was waited for, %d before it started", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestKillAll: no grace period for a user who asked twice, even for a child
// that ignores SIGINT.
func TestKillAll(t *testing.T) {
	var out syncBuffer
	p := start(t, Config{
		Argv:   []string{"sh", "-c", `trap "" INT; echo ready; sleep 100 & wait`},
		Stdout: &out,
		Grace:  time.Hour,
	})
	out.waitFor(t, "ready")
	p.Stop()
	KillAll()
	if code := wait(t, p); code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit code = %d, want %d", code, 128+int(syscall.SIGKILL))
	}
}

// TestKillStrays: what a killed ralph's agent left running is found by the
// environment ralph gave it in this directory, and nothing else is touched.
func TestKillStrays(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	dir, other := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	strayLeader, strayBg := spawnStray(t, dir, "RALPH_ITERATION=7", "RALPH_TASK_ID=US-1")
	deeperLeader, deeperBg := spawnStray(t, filepath.Join(dir, "sub"), "RALPH_ITERATION=7", "RALPH_TASK_ID=US-1")
	nextLeader, _ := spawnStray(t, dir, "RALPH_ITERATION=8", "RALPH_TASK_ID=US-1")
	elsewhere, _ := spawnStray(t, other, "RALPH_ITERATION=7", "RALPH_TASK_ID=US-1")

	found, err := KillStrays(dir, []string{"RALPH_ITERATION=7", "RALPH_TASK_ID=US-1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{strayLeader, strayBg, deeperLeader, deeperBg}
	slices.Sort(want)
	if !slices.Equal(found, want) {
		t.Errorf("KillStrays found %v, want %v", found, want)
	}
	for _, pid := range want {
		waitGone(t, pid)
	}
	for _, pid := range []int{nextLeader, elsewhere} {
		if !alive(pid) {
			t.Errorf("process %d, not a stray, was killed", pid)
		}
	}
	if found, err := KillStrays(dir, []string{"RALPH_ITERATION=7", "RALPH_TASK_ID=US-1"}); err != nil || len(found) != 0 {
		t.Errorf("second KillStrays = %v, %v; want none", found, err)
	}
}

// TestKillStraysNestedLoop: a process with RALPH_DIR is a stray of the
// directory it names and of no other. The agent of a loop that runs in a
// project nested in this one, on an iteration of the same number and story,
// works below this directory but is not this one's; this one's agent is,
// wherever it went and by whatever path it was told the directory. One
// with no RALPH_DIR, started by an older ralph, is still known by where it
// works, so that an upgrade leaves no stray running.
func TestKillStraysNestedLoop(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	dir, other := t.TempDir(), t.TempDir()
	nested := filepath.Join(dir, "nested")
	if err := os.Mkdir(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(other, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	iteration := []string{"RALPH_ITERATION=7", "RALPH_TASK_ID=US-1"}
	with := func(v string) []string { return append(slices.Clone(iteration), v) }
	ownLeader, ownBg := spawnStray(t, nested, with("RALPH_DIR="+dir)...)
	wentLeader, wentBg := spawnStray(t, other, with("RALPH_DIR="+link)...)
	olderLeader, olderBg := spawnStray(t, nested, iteration...)
	nestedLeader, nestedBg := spawnStray(t, nested, with("RALPH_DIR="+nested)...)
	nestedUp, _ := spawnStray(t, dir, with("RALPH_DIR="+nested)...)

	found, err := KillStrays(dir, iteration)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{ownLeader, ownBg, wentLeader, wentBg, olderLeader, olderBg}
	slices.Sort(want)
	if !slices.Equal(found, want) {
		t.Errorf("KillStrays found %v, want %v", found, want)
	}
	for _, pid := range want {
		waitGone(t, pid)
	}
	for _, pid := range []int{nestedLeader, nestedBg, nestedUp} {
		if !alive(pid) {
			t.Errorf("process %d, the nested loop's, was killed", pid)
		}
	}
}

// spawnStray starts in dir, with env added to the test's environment, a
// group leader with a background child, as an agent that started a server
// would leave, and returns both pids. The test's own RALPH_ variables are
// left out: run as a check of a ralph, the test has its iteration's, and
// its RALPH_DIR would make a process meant to have none another loop's.
func spawnStray(t *testing.T, dir string, env ...string) (leader, bg int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "bg.pid")
	cmd := exec.Command("sh", "-c", `sleep 100 & echo $! > "$1"; exec sleep 100`, "sh", pidFile)
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "RALPH_") })
	cmd.Env = append(cmd.Env, append(env, "PWD="+dir)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	bg = readPid(t, pidFile)
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	return cmd.Process.Pid, bg
}

func TestHolders(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	path := filepath.Join(t.TempDir(), "index.lock")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	held, err := Holders(path)
	if err != nil || !slices.Contains(held, os.Getpid()) {
		t.Errorf("Holders while open = %v, %v; want this process among them", held, err)
	}
	f.Close()
	held, err = Holders(path)
	if err != nil || len(held) != 0 {
		t.Errorf("Holders after close = %v, %v; want none", held, err)
	}
}
