package prd

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
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
