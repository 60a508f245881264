package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ralph-harness/ralph/internal/durable"
)

// TestPrepareCommit: a prepared content is nowhere to be seen, the file
// untouched, until it is committed; then the file holds it, with its mode,
// and nothing else is left in the directory. The syncs of the commit are
// the queue's: a failure of either is reported by Wait.
func TestPrepareCommit(t *testing.T) {
	for _, fail := range []int{0, 2, 3} { // 1: the content's own sync, in Prepare; 2: its name's; 3: the directory's
		t.Run(fmt.Sprintf("sync %d fails", fail), func(t *testing.T) { prepareCommit(t, fail) })
	}
}

// prepareCommit is TestPrepareCommit with the fail-th sync failing (none
// when 0).
func prepareCommit(t *testing.T, fail int) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	writeOld(t, path, "old\n", 0o640)
	if fail > 0 {
		failSync(t, fail)
	}
	p, err := Prepare(path, 0o644, []byte("new"), []byte("\n"))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	checkFile(t, path, "old\n", 0o640)
	if got, want := dirNames(t, dir), []string{"prd.json"}; !slices.Equal(got, want) {
		t.Errorf("after Prepare, the directory holds %q, want %q", got, want)
	}
	var q durable.Queue
	if err := p.Commit(&q); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	checkFile(t, path, "new\n", 0o640)
	if got, want := dirNames(t, dir), []string{"prd.json"}; !slices.Equal(got, want) {
		t.Errorf("after Commit, the directory holds %q, want %q", got, want)
	}
	err = q.Wait()
	switch {
	case fail == 0 && err != nil:
		t.Errorf("Wait: %v", err)
	case fail > 0 && !errors.Is(err, errSync):
		t.Errorf("sync %d failing: Wait = %v, want its failure", fail, err)
	case fail > 0 && !strings.HasPrefix(err.Error(), "write "+path+": "):
		t.Errorf("error %q does not name %s", err, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := fi.Sys().(*syscall.Stat_t).Nlink; n != 1 {
		t.Errorf("after Commit, %s has %d names, want 1", path, n)
	}
	p.Close()
	checkFile(t, path, "new\n", 0o640)
	if err := p.Commit(&q); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("a second Commit: %v, want fs.ErrClosed", err)
	}
}

// TestPrepareClose: a content prepared and closed leaves no trace.
func TestPrepareClose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	writeOld(t, path, "old\n", 0o644)
	p, err := Prepare(path, 0o644, []byte("new\n"))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	checkClosed(t, p, path, "old\n", 0o644)
	// A failed sync of the content leaves nothing to commit.
	failSync(t, 1)
	if _, err := Prepare(path, 0o644, []byte("new\n")); !errors.Is(err, errSync) {
		t.Errorf("Prepare with its sync failing: %v, want the failure", err)
	}
	if got, want := dirNames(t, dir), []string{"prd.json"}; !slices.Equal(got, want) {
		t.Errorf("the directory holds %q, want %q", got, want)
	}
}

// TestPrepareSymlink: through a symlink, the file it points to gets the
// content and the link stays; a link pointed elsewhere since Prepare
// changes nothing.
func TestPrepareSymlink(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		writeOld(t, filepath.Join(dir, sub, "prd.json"), sub+"\n", 0o600)
	}
	link := filepath.Join(dir, "prd.json")
	if err := os.Symlink(filepath.Join("a", "prd.json"), link); err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(link, 0o644, []byte("new\n"))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if err := p.Commit(nil); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symlink: %v, %v", link, fi, err)
	}
	checkFile(t, filepath.Join(dir, "a", "prd.json"), "new\n", 0o600)

	p, err = Prepare(link, 0o644, []byte("newer\n"))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer p.Close()
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("b", "prd.json"), link); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(nil); err == nil || !strings.Contains(err.Error(), "now a link to") {
		t.Errorf("Commit through a link pointed elsewhere: %v, want an error", err)
	}
	checkFile(t, filepath.Join(dir, "a", "prd.json"), "new\n", 0o600)
	checkFile(t, filepath.Join(dir, "b", "prd.json"), "b\n", 0o600)
	for _, sub := range []string{"a", "b"} {
		if got, want := dirNames(t, filepath.Join(dir, sub)), []string{"prd.json"}; !slices.Equal(got, want) {
			t.Errorf("%s holds %q, want %q", sub, got, want)
		}
	}
}

// TestLinkUnnamed: both ways of naming an unnamed file, the file's own
// link and the one through /proc that stands in where that is refused,
// give it its name and its content, and neither replaces a file already
// there.
func TestLinkUnnamed(t *testing.T) {
	for name, link := range map[string]func(*os.File, string) error{"own": linkUnnamed, "proc": linkThroughProc} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			f, err := openUnnamed(dir, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("new\n"); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "prd.json")
			if err := link(f, path); err != nil {
				t.Fatalf("link: %v", err)
			}
			checkFile(t, path, "new\n", 0o644)
			if err := link(f, path); !errors.Is(err, fs.ErrExist) {
				t.Errorf("a second link to the same name: %v, want fs.ErrExist", err)
			}
		})
	}
}

// TestWriteQueuedLetsGoOfOld: the file replaced is held open for the
// queue, which pays for freeing it while it syncs, and let go of: once
// Wait returns, no descriptor of it is left. The descriptor leaves the
// table as its close begins, most often long before the syncs end: run
// also with the close made only when the queue waits for it, the test
// finds a queue that does not.
func TestWriteQueuedLetsGoOfOld(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		if lazy {
			real := inBackground
			inBackground = func(fn func()) func() { return fn }
			t.Cleanup(func() { inBackground = real })
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "prd.json")
		writeOld(t, path, "old\n", 0o644)
		for range 10 {
			var q durable.Queue
			if err := WriteQueued(path, 0o644, &q, []byte("new\n")); err != nil {
				t.Fatalf("WriteQueued: %v", err)
			}
			if err := q.Wait(); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			if n := heldDeleted(t, path); n > 0 {
				t.Fatalf("closed only when waited for %v: after Wait, %d descriptors of the file replaced are still open", lazy, n)
			}
		}
	}
}

// heldDeleted counts the process's descriptors of files once at path and
// since removed or replaced.
func heldDeleted(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path+" (deleted)" {
			n++
		}
	}
	return n
}

// TestPrepareWrittenOver: a prepared file that another process wrote to,
// through /proc (an agent running meanwhile, say), is not committed: the
// file stays as it was, whether what was written is longer, shorter or of
// the same length.
func TestPrepareWrittenOver(t *testing.T) {
	for name, forged := range map[string]string{
		"longer":  `{"passes": true, "and": "more"}` + "\n",
		"shorter": "{}\n",
		"same":    `{"passes": true }` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "prd.json")
			writeOld(t, path, "old\n", 0o644)
			text := []byte(`{"passes": false}` + "\n")
			p, err := Prepare(path, 0o644, text[:5], text[5:])
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			forger, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", p.f.Fd()), os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Skip("the prepared file cannot be opened through /proc here:", err)
			}
			if _, err := forger.WriteString(forged); err != nil {
				t.Fatal(err)
			}
			forger.Close()
			var q durable.Queue
			if err := p.Commit(&q); !errors.Is(err, ErrChanged) {
				t.Errorf("Commit of a file written over: %v, want ErrChanged", err)
			}
			checkFile(t, path, "old\n", 0o644)
			if got, want := dirNames(t, dir), []string{"prd.json"}; !slices.Equal(got, want) {
				t.Errorf("the directory holds %q, want %q", got, want)
			}
		})
	}
}
