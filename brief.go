package main

import (
	"os"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/prd"
)

// briefHeap is the heap a brief command grows to before it collects.
const briefHeap = 256 << 20

// brief tunes the collector for a command that reads the three files once,
// says what it found or makes one edit, and exits (next, status, task,
// prompt): it collects only when its memory nears briefHeap rather than
// every few megabytes. Collecting garbage that the exit frees anyway was a
// third of what such a command spent on a prd.json of ten thousand stories.
// It is only for commands whose live heap does not grow with the ledger
// (they read its end): `ralph validate` parses all of it, and with a live
// heap past briefHeap the collector would run almost without pause. GOGC
// or GOMEMLIMIT in the environment have the last word. Such a command reads
// prd.json once, so the prd package keeps no memo of it either.
func brief(*cli.Context) error {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(briefHeap)
	}
	prd.ReadOnce()
	return nil
}
