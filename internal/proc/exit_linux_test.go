package proc

import (
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAwaitExit: awaitExit returns once the child has exited, not before,
// and leaves it for Wait, which still reads its exit status.
func TestAwaitExit(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read line; exit 3")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	returned := make(chan struct{})
	go func() {
		awaitExit(pid)
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatal("awaitExit returned while the child was still running")
	case <-time.After(200 * time.Millisecond):
	}
	in.Close() // the child reads end of input and exits
	<-returned
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil || info.Signo == 0 {
		t.Fatalf("after awaitExit, the child has not exited: %v", err)
	}
	cmd.Wait()
	if got := cmd.ProcessState.ExitCode(); got != 3 {
		t.Errorf("exit code after awaitExit = %d, want 3 (the child reaped by Wait)", got)
	}
}
