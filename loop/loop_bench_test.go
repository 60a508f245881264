package loop_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/bench/fixture"
	"github.com/ralph-harness/ralph/loop"
)

// The work directories are written once per test binary: a ledger of a
// million entries takes a few seconds to write.
var dirs fixture.Cache

func TestMain(m *testing.M) {
	code := m.Run()
	dirs.Remove()
	os.Exit(code)
}

// benchDir returns a work directory of 200 stories, 100 of them passing,
// and a ledger of n entries over those 100: the next story's one attempt
// is not among them, so looking for it reads as far back as the loop ever
// reads.
func benchDir(b *testing.B, n int) string {
	b.Helper()
	dir, err := dirs.Dir(200, 100, n)
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

var ledgerSizes = []int{1_000, 1_000_000}

// BenchmarkNextPrompt renders the next iteration's prompt from the three
// files, as `ralph loop --dry-run` and every iteration do.
func BenchmarkNextPrompt(b *testing.B) {
	for _, n := range ledgerSizes {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			o := loop.Options{Dir: benchDir(b, n), Config: loop.Config{Limits: loop.Limits{MaxAttempts: 5}}}
			var size int
			for b.Loop() {
				p, err := loop.NextPrompt(o)
				if err != nil || p == "" {
					b.Fatalf("NextPrompt: %d bytes, %v", len(p), err)
				}
				size = len(p)
			}
			b.ReportMetric(float64(size), "prompt-bytes")
		})
	}
}

// BenchmarkStatus is `ralph status` without its printing.
func BenchmarkStatus(b *testing.B) {
	for _, n := range ledgerSizes {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			dir := benchDir(b, n)
			for b.Loop() {
				r, err := loop.Status(loop.Options{Dir: dir})
				if err != nil || r.Totals.Iterations != n {
					b.Fatalf("Status: %d iterations, %v", r.Totals.Iterations, err)
				}
			}
		})
	}
}

// BenchmarkLoop runs the loop over 200 stories with the no-op agent, no
// checks and git off, and reports the time per iteration: the agent's own
// cost plus ralph's (BenchmarkRunNoop in package agent is the agent alone).
func BenchmarkLoop(b *testing.B) {
	const stories = 200
	dir := b.TempDir()
	agentScript := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agentScript, []byte("#!/bin/sh\ncat >/dev/null\necho '<ralph>done</ralph>'\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	cfg := loop.Config{
		Agent:  loop.AgentConfig{Argv: []string{agentScript}, Timeout: 10 * time.Minute, IdleTimeout: 10 * time.Minute},
		Limits: loop.Limits{MaxAttempts: 5, StallAfter: 3},
	}
	var iterations int
	for b.Loop() {
		b.StopTimer()
		if err := fixture.WriteFiles(dir, stories, 0, 0); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		err := loop.Run(context.Background(), loop.Options{Dir: dir, Config: cfg, Out: io.Discard, Err: io.Discard, Quiet: true})
		if err != nil {
			b.Fatal(err)
		}
		iterations += stories
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iterations), "ns/iteration")
}
