package proc

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	n, err := KillOrphans()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("killed %d, want 1 (the sleeping stray; the other was reaped)", n)
	}
	if hasChildren() {
		t.Error("a child is left after KillOrphans")
	}
	if _, err := os.Stat(escaped); err != nil {
		t.Fatalf("the stray never ran: %v", err)
	}
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
