package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ralph-harness/ralph/internal/fakeagent"
)

var update = flag.Bool("update", false, "rewrite the golden files of the testscripts")

// testClock is the frozen clock of every ralph run in the scripts, so that
// the ledger's times and durations are byte-stable.
func testClock() time.Time {
	return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
}

func noJitter(d time.Duration) time.Duration { return d }

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"ralph": func() {
			os.Exit(run(os.Args, os.Stdout, os.Stderr, env{now: testClock, jitter: noJitter}))
		},
		"fakeagent":     func() { os.Exit(fakeagent.Main()) },
		"interruptible": func() { os.Exit(interruptible(os.Args[1:])) },
		"editorsaves":   func() { os.Exit(editorSaves(os.Args[1:])) },
	})
}

// editorSaves saves each file named in turn as editors do, twice over:
// removed and written again, then emptied and written again, each save 50
// ms long, the next one 70 to 100 ms later; a second's pause follows each
// file's saves. NAME.a and NAME.b, NAME the file's name without its
// extension, are the texts saved, NAME.a last. One process makes every
// step, so that a busy machine, slow to start processes, does not stretch
// a save past the loop's wait for quiet. A machine busy enough to hold the
// process up still can: when a file stayed removed or empty for
// stretchedSave or longer, editorSaves says so, and writes how long into
// saves.stretched, as the file was then what the loop rightly warns of.
func editorSaves(files []string) int {
	const save = 50 * time.Millisecond
	var (
		broke   time.Time     // when the last save began
		longest time.Duration // the longest save
	)
	for _, gap := range []time.Duration{70 * time.Millisecond, 85 * time.Millisecond, 100 * time.Millisecond} {
		for _, file := range files {
			name := strings.TrimSuffix(file, filepath.Ext(file))
			a, errA := os.ReadFile(name + ".a")
			b, errB := os.ReadFile(name + ".b")
			if err := errors.Join(errA, errB); err != nil {
				fmt.Fprintf(os.Stderr, "editorsaves: %v\n", err)
				return 1
			}
			for range 2 {
				// A save lasts from the start of a step that breaks
				// the file to the end of the next, which mends it.
				for _, step := range []struct {
					do     func() error
					breaks bool
					after  time.Duration
				}{
					{func() error { return os.Remove(file) }, true, save},
					{func() error { return os.WriteFile(file, b, 0o644) }, false, gap},
					{func() error { return os.WriteFile(file, nil, 0o644) }, true, save},
					{func() error { return os.WriteFile(file, a, 0o644) }, false, gap},
				} {
					if step.breaks {
						broke = time.Now()
					}
					if err := step.do(); err != nil {
						fmt.Fprintf(os.Stderr, "editorsaves: %v\n", err)
						return 1
					}
					if !step.breaks {
						longest = max(longest, time.Since(broke))
					}
					time.Sleep(step.after)
				}
			}
			time.Sleep(time.Second)
		}
	}
	if longest >= stretchedSave {
		fmt.Fprintf(os.Stderr, "editorsaves: a save took %v, held up past the loop's wait for quiet\n", longest.Round(time.Millisecond))
		if err := os.WriteFile("saves.stretched", []byte(longest.String()+"\n"), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "editorsaves: %v\n", err)
			return 1
		}
	}
	return 0
}

// stretchedSave is how long a save must last for the loop to see the file
// removed or empty for its whole wait for quiet (loop's grace, 500 ms), less
// a margin for the two processes' clocks: shorter saves must draw no
// warning.
const stretchedSave = 450 * time.Millisecond

// interruptible runs a command with SIGINT and SIGHUP at their defaults, as
// a program started from a terminal has them: a script's `kill -INT` then
// stands for a person's Ctrl-C. sh starts a background job with SIGINT
// ignored, and ralph keeps a stop it was started ignoring.
func interruptible(args []string) int {
	// A caught signal is at its default in the program exec'd.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGHUP)
	path, err := exec.LookPath(args[0])
	if err == nil {
		err = syscall.Exec(path, args, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "interruptible: %v\n", err)
	return 1
}

func TestScripts(t *testing.T) {
	// The scripts stand for a person's Ctrl-C with kill -INT. When the
	// tests were started ignoring SIGINT or SIGHUP (as a background job of
	// a script), what the scripts start would inherit that, and ralph keeps
	// such a signal ignored; caught here, they are at their defaults there.
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGHUP} {
		if signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
	testscript.Run(t, testscript.Params{
		Dir:           filepath.Join("testdata", "script"),
		UpdateScripts: *update,
		Condition:     scriptCondition,
		Setup: func(e *testscript.Env) error {
			e.Setenv("FAKEAGENT_DIR", filepath.Join(e.WorkDir, "fake"))
			// Commits in scripts need an identity and no user config.
			e.Setenv("GIT_AUTHOR_NAME", "ralph test")
			e.Setenv("GIT_AUTHOR_EMAIL", "test@ralph.invalid")
			e.Setenv("GIT_COMMITTER_NAME", "ralph test")
			e.Setenv("GIT_COMMITTER_EMAIL", "test@ralph.invalid")
			e.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			e.Setenv("GIT_AUTHOR_DATE", "2026-01-02T03:04:05Z")
			e.Setenv("GIT_COMMITTER_DATE", "2026-01-02T03:04:05Z")
			e.Setenv("CLAUDECODE", "1")
			return nil
		},
	})
}

// scriptCondition evaluates the scripts' own conditions:
//
//	[tmpfs]  a tmpfs can be mounted in a user and mount namespace of its own
//	         (unshare -rm), where a write fails for real when the disk is full
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "tmpfs":
		return canMountTmpfs(), nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

var canMountTmpfs = sync.OnceValue(func() bool {
	dir, err := os.MkdirTemp("", "ralph-tmpfs")
	if err != nil {
		return false
	}
	defer os.Remove(dir)
	return exec.Command("unshare", "-rm", "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).Run() == nil
})
