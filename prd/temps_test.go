package prd

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/internal/flock"
)

// TestRemoveTempsWaitsForUpdate: leftovers are removed only once no save
// holds the file's lock, so a save in progress keeps its temp file.
func TestRemoveTempsWaitsForUpdate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	temp := filepath.Join(dir, ".prd.json.tmp-42")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(temp, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		removed []string
		err     error
	}
	done := make(chan result)
	go func() {
		removed, err := RemoveTemps(path)
		done <- result{removed, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("RemoveTemps returned %q, %v while the lock was held", r.removed, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("the temp file of the save in progress is gone: %v", err)
	}
	unlock()
	r := <-done
	if r.err != nil || !slices.Equal(r.removed, []string{temp}) {
		t.Errorf("RemoveTemps = %q, %v; want %q", r.removed, r.err, temp)
	}
}

// TestRemoveTempsNoFile: without prd.json there is no save to wait for, and
// the leftovers still go.
func TestRemoveTempsNoFile(t *testing.T) {
	dir := t.TempDir()
	temp := filepath.Join(dir, ".prd.json.tmp-42")
	if err := os.WriteFile(temp, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveTemps(filepath.Join(dir, "prd.json"))
	if err != nil || !slices.Equal(removed, []string{temp}) {
		t.Errorf("RemoveTemps = %q, %v; want %q", removed, err, temp)
	}
}

// TestLockFileFollowsSave: a lock waited for while the save that held it
// replaced the file is taken on the new file, the one the path names; a
// lock on the old one would keep nothing out.
func TestLockFileFollowsSave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	release := make(chan struct{})
	go func() {
		unlock, err := Lock(path)
		got <- err
		if err == nil {
			<-release
			unlock()
		}
	}()
	select {
	case err := <-got:
		t.Fatalf("Lock returned %v while the lock was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	next := filepath.Join(dir, ".prd.json.tmp-1")
	if err := os.WriteFile(next, []byte("{ }"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	defer close(release)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := flock.Lock(f, false); !errors.Is(err, flock.ErrLocked) {
		t.Errorf("lock of the new file = %v; want it held by the waiter, %v", err, flock.ErrLocked)
	}
}

// TestUnlockTwice: a release called again closes nothing, not even a
// descriptor that took the lock's number since.
func TestUnlockTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	other, err := os.Open(path) // the lowest free number: the lock's
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	unlock()
	if _, err := other.Stat(); err != nil {
		t.Errorf("a file opened after the release, once released again: %v", err)
	}
}
