package main

import (
	"runtime"
	"testing"
)

func TestWaiter(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	t.Setenv("GOMAXPROCS", "")
	runtime.GOMAXPROCS(2)
	waiter()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS %d, want 1", n)
	}

	// A GOMAXPROCS of the user's wins.
	t.Setenv("GOMAXPROCS", "2")
	runtime.GOMAXPROCS(2)
	waiter()
	if n := runtime.GOMAXPROCS(0); n != 2 {
		t.Errorf("with GOMAXPROCS set: %d, want it left at 2", n)
	}
}
