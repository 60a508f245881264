package flock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := open(), open()
	defer b.Close()
	if err := Lock(a, false); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := Lock(b, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second Lock without wait: %v, want ErrLocked", err)
	}
	// A waiting Lock gets the lock once the first is closed.
	got := make(chan error, 1)
	go func() { got <- Lock(b, true) }()
	select {
	case err := <-got:
		t.Fatalf("a waiting Lock returned %v while the lock was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	a.Close()
	if err := <-got; err != nil {
		t.Fatalf("a waiting Lock: %v", err)
	}
}
