package main

import (
	"io"
	"math"
	"runtime/debug"
	"testing"
)

func TestBrief(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	if err := brief(nil); err != nil {
		t.Fatal(err)
	}
	if p := debug.SetGCPercent(100); p != -1 {
		t.Errorf("GC percent %d, want -1 (off)", p)
	}
	if l := debug.SetMemoryLimit(math.MaxInt64); l != briefHeap {
		t.Errorf("memory limit %d, want %d", l, briefHeap)
	}

	// A GOGC or GOMEMLIMIT of the user's wins.
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(v, "50")
		if err := brief(nil); err != nil {
			t.Fatal(err)
		}
		if p := debug.SetGCPercent(100); p != 100 {
			t.Errorf("with %s set: GC percent %d, want it left at 100", v, p)
		}
		t.Setenv(v, "")
	}
}

// TestBriefCommands pins which commands turn the collector down: those that
// read the ledger's end, not the whole of it.
func TestBriefCommands(t *testing.T) {
	want := map[string]bool{"next": true, "status": true, "task": true, "prompt": true}
	for _, c := range newApp(io.Discard, io.Discard, env{}).Commands {
		if got := c.Before != nil; got != want[c.Name] {
			t.Errorf("%s: brief %v, want %v", c.Name, got, want[c.Name])
		}
	}
}
