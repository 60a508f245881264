package prd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/bench/fixture"
	"github.com/ralph-harness/ralph/internal/atomicfile"
)

func TestUpdateConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := os.WriteFile(path, []byte(`{"userStories": [{"id": "A", "title": "a", "attempts": 0}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			err := Update(path, path, nil, func(f *File) error {
				s := f.Story("A")
				st := s.Status()
				st.Attempts++
				s.SetStatus(st)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Story("A").Attempts; got != 20 {
		t.Errorf("attempts = %d after 20 concurrent updates, want 20", got)
	}
}

func TestUpdateErrorLeavesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	orig := []byte(`{"userStories": [{"id": "A", "title": "a"}]}`)
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	for _, want := range []error{boom, nil} {
		ret := want
		if ret == nil {
			ret = ErrUnchanged
		}
		err := Update(path, path, nil, func(f *File) error {
			f.Story("A").Title = "changed"
			return ret
		})
		if !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("Update returned %v, want %v", err, want)
		}
		got, _ := os.ReadFile(path)
		if string(got) != string(orig) {
			t.Errorf("file changed to %s", got)
		}
	}
}

// TestUpdateStoriesApart: in a brief command on two CPUs, UpdateStories
// checks a large file's dependencies while fn changes it and it is
// written (updateApart). It saves what Update saves, and a file Update
// turns down is turned down with the same errors and left as it was,
// though fn ran: fn's change is dropped.
func TestUpdateStoriesApart(t *testing.T) {
	defer func(n int) { splitMin = n }(splitMin)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer readOnce.Store(readOnce.Load())
	splitMin = 4 << 10
	ReadOnce()
	good := fixture.PRD(100, 50)
	if len(good) < 2*splitMin {
		t.Fatalf("the fixture is %d bytes: too small to be decoded in chunks", len(good))
	}
	deps := func(i int) string { return "\"dependsOn\": [\n        \"" + fixture.StoryID(i) }
	replace := func(pairs ...string) []byte {
		data := good
		for i := 0; i < len(pairs); i += 2 {
			if !bytes.Contains(data, []byte(pairs[i])) {
				t.Fatalf("the fixture has no %q", pairs[i])
			}
			data = bytes.Replace(data, []byte(pairs[i]), []byte(pairs[i+1]), 1)
		}
		return data
	}
	boom := errors.New("boom")
	reset := func(ret error) func(f *File) error {
		return func(f *File) error {
			f.Story(fixture.StoryID(1)).Reset()
			return ret
		}
	}
	tests := []struct {
		name string
		data []byte
		fn   func(f *File) error
		// apart: fn runs although the file is turned down, as only
		// updateApart calls it before the dependencies are checked.
		apart bool
	}{
		{name: "reset", data: good, fn: reset(nil)},
		{name: "fn fails", data: good, fn: reset(boom)},
		{name: "unchanged", data: good, fn: reset(ErrUnchanged)},
		{name: "unknown dependency", data: replace(deps(50), deps(99999)), fn: reset(nil), apart: true},
		{name: "cycle", data: replace(deps(2), deps(6), deps(5), deps(3)), fn: reset(nil), apart: true},
		{name: "story depends on itself", data: replace(deps(2), deps(3)), fn: reset(nil), apart: true},
		{name: "duplicate id", data: replace(`"id": "US-00007"`, `"id": "US-00008"`), fn: reset(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			run := func(name string, update func(path string, fn func(*File) error) (bool, error)) (called, valid bool, err error, saved []byte) {
				path := filepath.Join(dir, name)
				if err := os.WriteFile(path, tt.data, 0o644); err != nil {
					t.Fatal(err)
				}
				valid, err = update(path, func(f *File) error {
					called = true
					return tt.fn(f)
				})
				saved, rerr := os.ReadFile(path)
				if rerr != nil {
					t.Fatal(rerr)
				}
				return called, valid, err, saved
			}
			_, valid, err, saved := run("update.json", func(path string, fn func(*File) error) (bool, error) {
				called := false
				err := Update(path, "prd.json", nil, func(f *File) error {
					called = true
					return fn(f)
				})
				return called, err
			})
			called, validApart, errApart, savedApart := run("apart.json", func(path string, fn func(*File) error) (bool, error) {
				return UpdateStories(path, "prd.json", nil, fn)
			})
			if fmt.Sprint(errApart) != fmt.Sprint(err) {
				t.Errorf("UpdateStories returned\n%v\nUpdate\n%v", errApart, err)
			}
			if validApart != valid {
				t.Errorf("UpdateStories says valid %v, Update called fn: %v", validApart, valid)
			}
			if !bytes.Equal(savedApart, saved) {
				t.Errorf("UpdateStories saved\n%s\nUpdate\n%s", savedApart, saved)
			}
			if !valid && !bytes.Equal(saved, tt.data) {
				t.Errorf("a file turned down was changed")
			}
			if entries, err := os.ReadDir(dir); err != nil || len(entries) != 2 {
				t.Errorf("the directory holds %d files (%v), want the two prd.json files alone: no temp file left", len(entries), err)
			}
			if called != tt.apart && !valid {
				t.Errorf("fn called: %v; want %v (the file was turned down: fn runs only in updateApart, while its dependencies are checked)", called, tt.apart)
			}
		})
	}
}

// TestEditWaiting: an edit that finds the file's lock held says so, once,
// as it waits, and is made once the holder lets go; one that finds it free
// says nothing, however short the moment before the notice.
func TestEditWaiting(t *testing.T) {
	defer func(d time.Duration) { lockNotice = d }(lockNotice)
	lockNotice = 0
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := os.WriteFile(path, []byte(`{"userStories": [{"id": "A", "title": "a"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	retitle := func(title string) func(*File) error {
		return func(f *File) error {
			f.Story("A").Title = title
			return nil
		}
	}
	var told atomic.Int32
	if _, err := Edit(path, path, true, func() { told.Add(1) }, retitle("free")); err != nil {
		t.Fatal(err)
	}
	if n := told.Load(); n != 0 {
		t.Errorf("an edit of a file nobody locked said it waited %d times", n)
	}

	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Edit(path, path, false, func() {
			told.Add(1)
			unlock() // the holder lets go once the edit says it waits
		}, retitle("waited"))
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := told.Load(); n != 1 {
		t.Errorf("an edit that waited for the lock said so %d times, want 1", n)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Story("A").Title; got != "waited" {
		t.Errorf("title = %q after the edit that waited, want %q", got, "waited")
	}
}

// TestUpdateLinkChanged: prd.json a link, changed to lead to another file
// while an edit holds the lock, leaves the edit on the file locked and
// read; the other file, which nobody locked, is left as it was. (The save
// followed the link as it was then, and wrote the edit of one file over
// the other.) Each way of saving is tried: Update's and UpdateStories'
// apart (see updateApart).
func TestUpdateLinkChanged(t *testing.T) {
	defer func(n int) { splitMin = n }(splitMin)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer readOnce.Store(readOnce.Load())
	splitMin = 1
	for _, how := range []string{"Update", "UpdateStories"} {
		t.Run(how, func(t *testing.T) {
			readOnce.Store(how == "UpdateStories")
			dir := t.TempDir()
			a, b, link := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"), filepath.Join(dir, "prd.json")
			other := []byte(`{"userStories": [{"id": "A", "title": "b's"}]}`)
			if err := errors.Join(
				os.WriteFile(a, []byte(`{"userStories": [{"id": "A", "title": "a's"}]}`), 0o644),
				os.WriteFile(b, other, 0o644),
				os.Symlink("a.json", link),
			); err != nil {
				t.Fatal(err)
			}
			relink := func() {
				if err := errors.Join(os.Remove(link), os.Symlink("b.json", link)); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			switch how {
			case "Update":
				err = Update(link, "prd.json", nil, func(f *File) error {
					relink()
					f.Story("A").Attempts = 1
					return nil
				})
			case "UpdateStories":
				_, err = UpdateStories(link, "prd.json", nil, func(f *File) error {
					relink()
					f.Story("A").Attempts = 1
					return nil
				})
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(b); !bytes.Equal(got, other) {
				t.Errorf("the file the link was changed to, which nobody locked, was written:\n%s", got)
			}
			f, err := Load(a)
			if err != nil {
				t.Fatal(err)
			}
			if s := f.Story("A"); s.Attempts != 1 || s.Title != "a's" {
				t.Errorf("the file locked and read has %q with %d attempts, want a's with 1", s.Title, s.Attempts)
			}
		})
	}
}

// TestUpdateSyncFails: the sync that makes an update's rename durable runs
// on a queue of its own, after the lock is let go of; its failure is
// still Update's error, naming the file: the edit may be lost to a crash.
func TestUpdateSyncFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := os.WriteFile(path, []byte(`{"userStories": [{"id": "A", "title": "a"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	errSync := errors.New("sync failed")
	defer atomicfile.SetSync(func(f *os.File) error {
		if info, err := f.Stat(); err == nil && info.IsDir() {
			return errSync // the directory's, queued: the temp file's went well
		}
		return f.Sync()
	})()
	err := Update(path, "prd.json", nil, func(f *File) error {
		f.Story("A").Attempts = 1
		return nil
	})
	if !errors.Is(err, errSync) || !strings.Contains(err.Error(), path) {
		t.Errorf("Update with the directory's sync failing: %v, want %v naming %s", err, errSync, path)
	}
}
