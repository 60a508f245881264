package prd

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestRemoveTempsWaitsForUpdate: leftovers are removed only once no save
// holds the directory's lock, so a save in progress keeps its temp file.
func TestRemoveTempsWaitsForUpdate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	temp := filepath.Join(dir, ".prd.json.tmp-42")
	if err := os.WriteFile(temp, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockDir(dir)
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
