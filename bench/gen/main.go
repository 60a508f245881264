// Command gen writes the files of a benchmark work directory: prd.json,
// progress.txt and, with -agent, a harness.toml naming the agent. With
// -probe it measures instead what the durable writes of an iteration cost on
// the disk under -dir; with -rewrite it reads a file and replaces it
// atomically with the same text, the floor of a save as a whole process;
// with -spawn it runs an agent again and again, the floor of a loop.
// bench/run uses it; it is not part of ralph.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/ralph-harness/ralph/bench/fixture"
	"github.com/ralph-harness/ralph/internal/atomicfile"
	"github.com/ralph-harness/ralph/internal/durable"
	"github.com/ralph-harness/ralph/progress"
)

func main() {
	dir := flag.String("dir", ".", "the work directory to write into")
	stories := flag.Int("stories", 200, "stories in prd.json")
	passing := flag.Int("passing", 0, "how many of them pass")
	entries := flag.Int("entries", 0, "ledger entries in progress.txt")
	agent := flag.String("agent", "", "also write harness.toml running this agent script (a path in -dir)")
	probe := flag.Bool("probe", false, "print the median cost in ms of an atomic rewrite of a prd.json of -stories stories, of such a rewrite up to its rename, and of a synced append to a ledger, in -dir")
	rewrite := flag.String("rewrite", "", "read this file and replace it atomically with what it read, and nothing else: the least a save of it costs")
	spawn := flag.Int("spawn", 0, "run -agent this many times, one after another, with the file -prompt on its stdin through a pipe and its output read through another, and nothing else: the least a Go program running the agent costs")
	prompt := flag.String("prompt", "", "with -spawn: the prompt's file")
	flag.Parse()
	var err error
	switch {
	case *rewrite != "":
		err = rewriteFile(*rewrite)
	case *spawn > 0:
		err = spawnAgent(*agent, *prompt, *spawn)
	case *probe:
		err = probeWrites(*dir, *stories)
	default:
		err = run(*dir, *stories, *passing, *entries, *agent)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string, stories, passing, entries int, agent string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := fixture.WriteFiles(dir, stories, passing, entries); err != nil {
		return err
	}
	if agent == "" {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "harness.toml"), []byte(fixture.Harness(agent)), 0o644)
}

// rewriteFile reads the file at path and replaces it atomically with the
// same text, as a save of prd.json does, without parsing or changing it:
// as a whole process, the floor of loading, picking and saving.
func rewriteFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}

// spawnAgent runs the agent n times, one after another, with the prompt in
// the file at promptPath on its stdin and its stdout read, as ralph runs it
// through os/exec's pipes, and does nothing else: as a whole process, the
// floor of a loop written in Go.
func spawnAgent(agent, promptPath string, n int) error {
	prompt, err := os.ReadFile(promptPath)
	if err != nil {
		return err
	}
	for range n {
		cmd := exec.Command(agent)
		cmd.Stdin = bytes.NewReader(prompt)
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", agent, err)
		}
	}
	return nil
}

// probeWrites prints what an iteration's durable writes cost here: the
// median of 100 atomic rewrites (temp file, fsync, rename, fsync of the
// directory) of a prd.json of the given size; the median of 100 such
// rewrites up to the rename, the part the loop waits for (the directory's
// sync is queued, see atomicfile.WriteQueued); and that of 100 appends of a
// ledger entry, each followed by an fsync.
func probeWrites(dir string, stories int) error {
	data := fixture.PRD(stories, 0)
	path := filepath.Join(dir, "probe.json")
	defer os.Remove(path)
	rewrite, err := median(func() error { return atomicfile.Write(path, data, 0o644) }, nil)
	if err != nil {
		return err
	}
	var q durable.Queue
	onPath, err := median(func() error { return atomicfile.WriteQueued(path, 0o644, &q, data) }, q.Wait)
	if err != nil {
		return err
	}
	ledger := filepath.Join(dir, "probe.txt")
	defer os.Remove(ledger)
	f, err := os.OpenFile(ledger, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	entry := append([]byte("\n"), fixtureEntry()...)
	appendSync, err := median(func() error {
		if _, err := f.Write(entry); err != nil {
			return err
		}
		return f.Sync()
	}, nil)
	if err != nil {
		return err
	}
	fmt.Printf("%.3f %.3f %.3f\n", ms(rewrite), ms(onPath), ms(appendSync))
	return nil
}

func fixtureEntry() []byte {
	return progress.Format(fixture.Entry(1, 1))
}

// median runs fn 100 times and returns the median duration; after, when
// not nil, runs after each, untimed.
func median(fn, after func() error) (time.Duration, error) {
	var ds []time.Duration
	for range 100 {
		start := time.Now()
		if err := fn(); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(start))
		if after != nil {
			if err := after(); err != nil {
				return 0, err
			}
		}
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
