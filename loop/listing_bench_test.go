package loop

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkGuardFiles is the guard's part of an iteration that looks at
// the project's files, outside git: the listing before the agent, with
// the test files kept, and the one after it, compared with it. The
// project holds what bench/run's does: the three files, the agent and a
// few more.
func BenchmarkGuardFiles(b *testing.B) {
	dir := b.TempDir()
	for _, name := range []string{PRDFile, ProgressFile, HarnessFile, "agent.sh", "prd.orig", "progress.orig", "prompt.txt", "shell-loop"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	o := &Options{Dir: dir, Config: Config{Guard: Guard{Tests: DefaultTests}}}
	ctx := context.Background()
	for b.Loop() {
		s, err := takeFiles(ctx, o, true, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, _, err := s.guard(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
}
