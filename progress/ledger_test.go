package progress

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/internal/durable"
)

func openLedger(tb testing.TB, path string) *Ledger {
	tb.Helper()
	l, err := Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

func parseFile(tb testing.TB, path string) (string, []Entry, int) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	head, entries, torn, err := Parse(f)
	if err != nil {
		tb.Fatal(err)
	}
	return head, entries, torn
}

func TestOpenCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress.txt")
	openLedger(t, path)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 {
		t.Errorf("new file has %d bytes, want 0", st.Size())
	}
	if perm := st.Mode().Perm(); perm&^0o644 != 0 {
		t.Errorf("mode = %v, want at most 0644", perm)
	}
}

// TestOpenWaitsForAKilledRalph: a lock released a moment after Open tries
// it (the child of a ralph just killed, which had the directory open) is
// taken; one held past lockPatience is another ralph's.
func TestOpenWaitsForAKilledRalph(t *testing.T) {
	defer func(d time.Duration) { lockPatience = d }(lockPatience)
	path := filepath.Join(t.TempDir(), "progress.txt")
	first := openLedger(t, path)
	lockPatience = time.Minute
	go func() {
		time.Sleep(50 * time.Millisecond)
		first.Close()
	}()
	l, err := Open(path)
	if err != nil {
		t.Fatalf("Open while the lock was released a moment later: %v", err)
	}
	defer l.Close()
	lockPatience = 50 * time.Millisecond
	start := time.Now()
	if _, err := Open(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open of a held ledger: err = %v, want %v", err, ErrLocked)
	}
	if waited := time.Since(start); waited < lockPatience {
		t.Errorf("Open gave up after %v, before lockPatience (%v)", waited, lockPatience)
	}
}

// TestOpenLocked: one ledger per directory. A second Open is refused,
// also once the file was replaced or removed before the first ledger
// followed it (an editor's save, a person's rm): the lock is the
// directory's, which they cannot take away.
func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "progress.txt")
	l := openLedger(t, path)
	refused := func(when string) {
		t.Helper()
		second, err := Open(path)
		if !errors.Is(err, ErrLocked) {
			if second != nil {
				second.Close()
			}
			t.Fatalf("second Open %s: err = %v, want %v", when, err, ErrLocked)
		}
		if !strings.Contains(err.Error(), dir) {
			t.Errorf("error %q does not name the directory", err)
		}
	}
	refused("while the first is open")
	edited := filepath.Join(dir, "progress.txt~")
	if err := os.WriteFile(edited, []byte("human note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(edited, path); err != nil {
		t.Fatal(err)
	}
	refused("after the file was replaced")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	refused("after the file was removed")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	third, err := Open(path)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	third.Close()
}

func TestAppend(t *testing.T) {
	head := "## Codebase Patterns\n- tests live next to code"
	tornEntry := string(Format(entryN(2)))
	tests := []struct {
		name      string
		before    string
		wantHead  string
		wantIters []int
		wantTorn  int
	}{
		{"empty file", "", "", []int{7}, 0},
		{"head without newline", head, head + "\n\n", []int{7}, 0},
		{"after an entry", head + "\n" + string(Format(entryN(1))), head + "\n", []int{1, 7}, 0},
		{"after a torn entry", string(Format(entryN(1))) + tornEntry[:len(tornEntry)/2], "", []int{1, 7}, 1},
		{"after a torn start marker", string(Format(entryN(1))) + "=== ralph iter", "", []int{1, 7}, 0},
		{"after an end marker without newline", string(Format(entryN(1)))[:len(Format(entryN(1)))-1], "", []int{1, 7}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "progress.txt")
			if err := os.WriteFile(path, []byte(tt.before), 0o644); err != nil {
				t.Fatal(err)
			}
			l := openLedger(t, path)
			e := fullEntry()
			e.Iteration = 7
			if err := l.Append(e); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), "\n"+startMarker(e)+"\n") && !strings.HasPrefix(string(data), startMarker(e)) {
				t.Errorf("start marker is not at the start of a line:\n%s", data)
			}
			gotHead, entries, torn := parseFile(t, path)
			if gotHead != tt.wantHead {
				t.Errorf("head = %q, want %q", gotHead, tt.wantHead)
			}
			if its := iterations(entries); !reflect.DeepEqual(its, tt.wantIters) {
				t.Errorf("iterations = %v, want %v", its, tt.wantIters)
			}
			if torn != tt.wantTorn {
				t.Errorf("torn = %d, want %d", torn, tt.wantTorn)
			}
			if last := entries[len(entries)-1]; !reflect.DeepEqual(last, e) {
				t.Errorf("appended entry parses as %#v, want %#v", last, e)
			}
			tail, err := Tail(path, 1)
			if err != nil || len(tail) != 1 || !reflect.DeepEqual(tail[0], e) {
				t.Errorf("Tail(1) = %v, %v; want the appended entry", iterations(tail), err)
			}
		})
	}
}

func TestAppendMany(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress.txt")
	l := openLedger(t, path)
	var want []Entry
	for i := 1; i <= 5; i++ {
		e := entryN(i)
		want = append(want, e)
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	head, entries, torn := parseFile(t, path)
	if head != "" || torn != 0 || !reflect.DeepEqual(entries, want) {
		t.Errorf("Parse = %q, %v, %d torn; want 1..5", head, iterations(entries), torn)
	}
}

// TestAppendAfterReplace covers an editor saving the head by writing a new
// file and renaming it over progress.txt while ralph runs.
func TestAppendAfterReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "progress.txt")
	l := openLedger(t, path)
	if err := l.Append(entryN(1)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := filepath.Join(dir, "progress.txt~")
	if err := os.WriteFile(edited, append([]byte("human note\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(edited, path); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(entryN(2)); err != nil {
		t.Fatal(err)
	}
	head, entries, _ := parseFile(t, path)
	if head != "human note\n" || !reflect.DeepEqual(iterations(entries), []int{1, 2}) {
		t.Errorf("after replace: head %q, iterations %v; want the note and 1, 2", head, iterations(entries))
	}
	if _, err := Open(path); !errors.Is(err, ErrLocked) {
		t.Errorf("Open of the replaced file: err = %v, want %v", err, ErrLocked)
	}
}

// TestAppendAfterRemove: a progress.txt removed while ralph holds it open
// comes back whole, head and entries, before the next entry is appended;
// Follow says that it put it back.
func TestAppendAfterRemove(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress.txt")
	if err := os.WriteFile(path, []byte("# notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, path)
	if err := l.Append(entryN(1)); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if restored, err := l.Follow(); err != nil || !restored {
		t.Fatalf("Follow after a remove = %v, %v; want it restored", restored, err)
	}
	if restored, err := l.Follow(); err != nil || restored {
		t.Errorf("Follow again = %v, %v; want nothing to do", restored, err)
	}
	if err := l.Append(entryN(2)); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(after, before) {
		t.Errorf("after remove: %q, %v; want it to start with what it held before, %q", after, err, before)
	}
	if _, entries, _ := parseFile(t, path); !reflect.DeepEqual(iterations(entries), []int{1, 2}) {
		t.Errorf("after remove: iterations %v, want 1, 2", iterations(entries))
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("restored file: %v, %v; want mode 0600", info, err)
	}
	if _, err := Open(path); !errors.Is(err, ErrLocked) {
		t.Errorf("Open of the restored file: err = %v, want %v", err, ErrLocked)
	}
}

// TestLedgerQueuedSyncs: with its syncs queued, a record is in the file when
// Begin or Append returns, and Close waits for the queue and reports what
// failed in it.
func TestLedgerQueuedSyncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress.txt")
	l := openLedger(t, path)
	var q durable.Queue
	l.QueueSyncs(&q)
	release := make(chan struct{})
	boom := errors.New("boom")
	// A slow sync ahead of the ledger's: its records must not wait for it.
	q.Do(func() error { <-release; return boom })
	if err := l.Begin(Mark{Iteration: 1, StoryID: "US-001", Attempt: 1, Time: time.Unix(0, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), "=== ralph started iteration 1") {
		t.Fatalf("the marker is not in the file before its sync ran: %q, %v", data, err)
	}
	closed := make(chan error)
	go func() { closed <- l.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v before the queue was done", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := <-closed; !errors.Is(err, boom) {
		t.Errorf("Close = %v, want the queue's failure", err)
	}
}

// TestLedgerSyncsCovered: a sync covers every record written before it
// began, so the sync queued for a record another sync has covered does not
// run; one that failed covers nothing.
func TestLedgerSyncsCovered(t *testing.T) {
	boom := errors.New("boom")
	calls, fail := 0, 0
	orig := syncFile
	syncFile = func(f *os.File) error {
		calls++
		if calls == fail {
			return boom
		}
		return orig(f)
	}
	t.Cleanup(func() { syncFile = orig })
	for _, failing := range []int{0, 1} {
		calls, fail = 0, failing
		l := openLedger(t, filepath.Join(t.TempDir(), "progress.txt"))
		var q durable.Queue
		l.QueueSyncs(&q)
		// Both records are written while the queue is busy.
		release := make(chan struct{})
		q.Do(func() error { <-release; return nil })
		m := Mark{Iteration: 1, StoryID: "US-001", Attempt: 1, Time: time.Unix(0, 0).UTC()}
		if err := l.Begin(m); err != nil {
			t.Fatal(err)
		}
		if err := l.Append(Entry{Iteration: 1, StoryID: "US-001", Attempt: 1, Time: m.Time, AgentExit: 0}); err != nil {
			t.Fatal(err)
		}
		close(release)
		err := q.Wait()
		want := 1
		if failing > 0 {
			want = 2
			if !errors.Is(err, boom) {
				t.Errorf("first sync failing: Wait = %v, want its failure", err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		if calls != want {
			t.Errorf("first sync failing: %v: %d syncs for two records written before any, want %d", failing > 0, calls, want)
		}
		// A record written after the last sync began gets its own.
		if err := l.Begin(Mark{Iteration: 2, StoryID: "US-001", Attempt: 2, Time: m.Time}); err != nil {
			t.Fatal(err)
		}
		q.Wait()
		if calls != want+1 {
			t.Errorf("%d syncs after a third record, want %d", calls, want+1)
		}
		l.Close()
	}
}

// openBrief is OpenBrief for a test that fails without the lock; the test
// closes the ledger.
func openBrief(tb testing.TB, path string) *Ledger {
	tb.Helper()
	l, err := OpenBrief(path)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// TestOpenWaitingForBrief: a loop that finds the lock held by a brief
// holder (a `ralph task` edit recording an iteration) waits for it, says
// so once, and takes the lock once it is let go of.
func TestOpenWaitingForBrief(t *testing.T) {
	defer func(d time.Duration) { lockPatience = d }(lockPatience)
	lockPatience = 20 * time.Millisecond
	path := filepath.Join(t.TempDir(), "progress.txt")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	brief := openBrief(t, path)
	told := 0
	l, err := OpenWaiting(context.Background(), path, time.Hour, func() {
		told++
		brief.Close()
	})
	if err != nil {
		t.Fatalf("OpenWaiting while a brief holder had the lock: %v", err)
	}
	defer l.Close()
	if told != 1 {
		t.Errorf("waiting was called %d times, want 1", told)
	}
}

// TestOpenWaitingRefusesLoop: a lock another loop holds is refused as
// Open refuses it, without a wait.
func TestOpenWaitingRefusesLoop(t *testing.T) {
	defer func(d time.Duration) { lockPatience = d }(lockPatience)
	lockPatience = 20 * time.Millisecond
	path := filepath.Join(t.TempDir(), "progress.txt")
	openLedger(t, path)
	told := false
	l, err := OpenWaiting(context.Background(), path, time.Hour, func() { told = true })
	if !errors.Is(err, ErrLocked) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("OpenWaiting while another loop had the lock: err = %v, want %v", err, ErrLocked)
	}
	if told {
		t.Error("OpenWaiting waited for another loop")
	}
}

// TestOpenWaitingBounded: a brief holder that keeps the lock past the wait
// (stuck), or a wait that is cancelled, ends it with an error saying so.
func TestOpenWaitingBounded(t *testing.T) {
	defer func(d time.Duration) { lockPatience = d }(lockPatience)
	lockPatience = 20 * time.Millisecond
	dir := t.TempDir()
	path := filepath.Join(dir, "progress.txt")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer openBrief(t, path).Close()
	_, err := OpenWaiting(context.Background(), path, 0, nil)
	if !errors.Is(err, ErrBrief) || errors.Is(err, ErrLocked) {
		t.Fatalf("OpenWaiting past its wait: err = %v, want %v", err, ErrBrief)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the directory", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = OpenWaiting(ctx, path, time.Hour, cancel)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("OpenWaiting cancelled: err = %v, want %v", err, context.Canceled)
	}
}

// TestOpenBriefLocked: a brief holder is one holder of the lock as any:
// refused while a loop or another brief holder has it, and the lock is
// free once it let go.
func TestOpenBriefLocked(t *testing.T) {
	defer func(d time.Duration) { lockPatience = d }(lockPatience)
	lockPatience = 20 * time.Millisecond
	path := filepath.Join(t.TempDir(), "progress.txt")
	loop := openLedger(t, path)
	if l, err := OpenBrief(path); !errors.Is(err, ErrLocked) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("OpenBrief while a loop had the lock: err = %v, want %v", err, ErrLocked)
	}
	loop.Close()
	brief := openBrief(t, path)
	if l, err := OpenBrief(path); !errors.Is(err, ErrLocked) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("OpenBrief while another brief holder had the lock: err = %v, want %v", err, ErrLocked)
	}
	if l, err := Open(path); !errors.Is(err, ErrLocked) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("Open while a brief holder had the lock: err = %v, want %v", err, ErrLocked)
	}
	brief.Close()
	if held, err := Held(path); err != nil || held {
		t.Errorf("Held after the brief holder let go = %v, %v; want false", held, err)
	}
	if briefHeld(path) {
		t.Error("the file's lock is held after the brief holder let go")
	}
}

// TestOpenBriefWhileLoopRuns: a brief holder that finds the directory
// held by a running loop holds nothing while it tries for it. One that
// held the file's lock meanwhile was taken, by a loop started then, for
// the holder of the directory: the loop said it waited for a `ralph task`
// edit (briefHeld, which OpenWaiting and HeldBy ask), then was refused as
// another loop. The file is looked at while the brief holder tries, for as
// long as it takes to start it many times over.
func TestOpenBriefWhileLoopRuns(t *testing.T) {
	defer func(d time.Duration) { lockPatience = d }(lockPatience)
	lockPatience = time.Minute // the brief holder tries until the loop ends
	path := filepath.Join(t.TempDir(), "progress.txt")
	loop := openLedger(t, path)
	brief := make(chan *Ledger, 1)
	go func() {
		l, err := OpenBrief(path)
		if err != nil {
			t.Error(err)
		}
		brief <- l
	}()
	for range 50 {
		if briefHeld(path) {
			t.Error("the file's lock is held while a loop holds the directory's: a starting loop would wait for a `ralph task` edit")
			break
		}
		if who, err := HeldBy(path); err != nil || who != LoopHolder {
			t.Errorf("HeldBy = %v, %v while a loop holds the lock, want %v", who, err, LoopHolder)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	loop.Close()
	if l := <-brief; l != nil {
		if who, err := HeldBy(path); err != nil || who != BriefHolder {
			t.Errorf("HeldBy = %v, %v while a brief holder holds the lock, want %v", who, err, BriefHolder)
		}
		l.Close()
	}
	if who, err := HeldBy(path); err != nil || who != NoHolder {
		t.Errorf("HeldBy = %v, %v once every holder let go, want %v", who, err, NoHolder)
	}
}
