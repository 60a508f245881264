// Package checks runs the project's checks (tests, linters, builds) the way
// ralph judges an iteration: by itself, never on the agent's word. Checks run
// concurrently, each in its own process group with its own timeout, and only
// the tail of their output is kept, for the ledger and the next prompt.
package checks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralph-harness/ralph/internal/ansi"
	"github.com/ralph-harness/ralph/internal/proc"
	"github.com/ralph-harness/ralph/internal/tail"
	"github.com/ralph-harness/ralph/internal/textcut"
)

// DefaultTailBytes is how much of a check's output is kept when
// Options.TailBytes is 0.
const DefaultTailBytes = 8 << 10

// Check is one command that must (or, when optional, should) succeed.
type Check struct {
	Name     string
	Run      string        // run with `sh -c` in Dir
	Timeout  time.Duration // 0: none
	Required bool          // a failing optional check is reported but does not block
	Baseline bool          // blocks only when it fails in a way it did not before the story's first attempt
}

// Result is the outcome of one check.
type Result struct {
	Check
	Passed   bool          // exited 0 in time
	ExitCode int           // exit status; 128+sig when killed by a signal; -1 if it never ran
	Duration time.Duration // as measured with Options.Now
	TimedOut bool          // stopped because it ran past Check.Timeout
	Output   string        // the last TailBytes of combined stdout+stderr (all of it when shorter)
	Cut      bool          // Output is the end of a longer output: its first line may be cut anywhere
	Lines    int           // how many lines the whole output had
	Err      error         // could not start (e.g. no sh), or cancelled before it started
	Tests    int           // how many tests the output reported ran, not skipped; -1 when it reported none
	// Stopped says that ctx ended the check, before it started or while
	// it ran, and it did not pass: it neither passed nor failed.
	Stopped bool
}

// Options say where and how checks run.
type Options struct {
	Dir string
	// Env is the complete environment (nil: ralph's own), but for the
	// relative directories of its $PATH, which the checks run without
	// (see Run).
	Env       []string
	TailBytes int               // 0: DefaultTailBytes
	Parallel  int               // max concurrent checks; 0: all at once
	Grace     time.Duration     // SIGINT → SIGKILL delay; 0: 5s
	Done      func(int, Result) // optional: called with i and its result as cs[i] ends, one call at a time
	Now       func() time.Time  // for Duration; nil: time.Now
	// Redact, when set, is applied to each check's kept output
	// (Result.Output) to keep ralph's secrets out of it, from any
	// goroutine; cut says the output is the end of a longer one.
	Redact func(output string, cut bool) string
	// Watch, when set, gives the writer that also receives the whole
	// output of cs[i], as it comes and not redacted, from the check's
	// goroutine; nil for none. (Result.Output keeps only its last
	// TailBytes.)
	Watch func(i int) io.Writer
}

// Run runs all checks concurrently (at most Parallel at a time), each in its
// own process group with its timeout; cancelling ctx stops them all. Results
// come back in the order of cs.
//
// The checks run without the relative directories of $PATH (RelativePath):
// sh finds a program through one in the work directory, which the agent
// writes, and a grep it left in ./node_modules/.bin would pass a check that
// greps for its work.
func Run(ctx context.Context, cs []Check, o Options) []Result {
	o.Env = absolutePath(o.Env)
	if o.TailBytes <= 0 {
		o.TailBytes = DefaultTailBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	parallel := o.Parallel
	if parallel <= 0 || parallel > len(cs) {
		parallel = len(cs)
	}
	results := make([]Result, len(cs))
	var progress sync.Mutex
	report := func(i int) {
		if o.Done == nil {
			return
		}
		progress.Lock()
		defer progress.Unlock()
		o.Done(i, results[i])
	}

	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	// Checks start in the order of cs, so that Parallel: 1 runs them one
	// after the other as listed.
	for i, c := range cs {
		select {
		case slots <- struct{}{}:
			wg.Go(func() {
				defer func() { <-slots }()
				results[i] = runOne(ctx, i, c, o)
				report(i)
			})
		case <-ctx.Done():
			results[i] = Result{Check: c, ExitCode: -1, Err: fmt.Errorf("run check %s: %w", c.Name, ctx.Err()), Stopped: true}
			report(i)
		}
	}
	wg.Wait()
	return results
}

func runOne(ctx context.Context, i int, c Check, o Options) Result {
	res := Result{Check: c, ExitCode: -1}
	if ctx.Err() != nil {
		// A free slot and a cancelled ctx may both have been ready.
		res.Err = fmt.Errorf("run check %s: %w", c.Name, ctx.Err())
		res.Stopped = true
		return res
	}
	tailOut := tail.New(o.TailBytes)
	tests := newTestCounter()
	var lines lineCounter
	out := io.MultiWriter(tailOut, tests, &lines)
	if o.Watch != nil {
		if w := o.Watch(i); w != nil {
			out = io.MultiWriter(out, w)
		}
	}
	start := o.Now()
	p, err := proc.Start(ctx, proc.Config{
		Argv:   []string{shell, "-c", c.Run},
		Dir:    o.Dir,
		Env:    o.Env,
		Stdout: out, // the same writer for both: one pipe, as with 2>&1
		Stderr: out,
		Grace:  o.Grace,
	})
	if err != nil {
		res.Err = fmt.Errorf("run check %s: %w", c.Name, err)
		return res
	}
	if c.Timeout > 0 {
		// The timeout is the check's own run: output that a daemon it
		// started (setsid) goes on writing after it exited is read for
		// the grace period at most, and makes no check time out.
		t := time.NewTimer(c.Timeout)
		select {
		case <-p.Exited():
		case <-t.C:
			res.TimedOut = true
			p.Stop()
		}
		t.Stop()
	}
	res.ExitCode = p.Wait()
	res.Duration = o.Now().Sub(start)
	res.Output, res.Cut, res.Lines = tailOut.String(), tailOut.Truncated(), int(lines)
	if o.Redact != nil {
		res.Output = o.Redact(res.Output, res.Cut)
	}
	res.Tests = tests.count()
	res.Passed = res.ExitCode == 0 && !res.TimedOut
	// Stopped with the rest (an interrupt, ralph's own SIGINT to its
	// group), a check that did not pass did not fail either.
	res.Stopped = !res.Passed && ctx.Err() != nil
	return res
}

// shell runs the checks: by its path, not looked up in ralph's $PATH, where
// a relative directory could find an sh the agent left in the work
// directory (or have Go refuse to run one found there, failing every
// check).
const shell = "/bin/sh"

// RelativePath returns the directories of the $PATH in env that are not
// absolute, each once, in order: "bin", "./node_modules/.bin", and "" for an
// empty entry (a leading, trailing or doubled colon), which is the current
// directory to a shell. The checks run without them (see Run).
func RelativePath(env []string) []string {
	var rel []string
	for _, kv := range env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range pathDirs(path, false) {
				if !slices.Contains(rel, dir) {
					rel = append(rel, dir)
				}
			}
		}
	}
	return rel
}

// pathDirs returns the directories of a $PATH that are absolute, or those
// that are not.
func pathDirs(path string, abs bool) []string {
	var dirs []string
	for dir := range strings.SplitSeq(path, string(filepath.ListSeparator)) {
		if filepath.IsAbs(dir) == abs {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// absolutePath returns env (nil: ralph's own) with the relative
// directories left out of its $PATH; nil when env is nil and has none. A
// $PATH left with none at all is left out: an empty one is the current
// directory to a shell, and sh without one searches its default
// directories.
func absolutePath(env []string) []string {
	base := env
	if base == nil {
		base = os.Environ()
	}
	if len(RelativePath(base)) == 0 {
		return env
	}
	clean := make([]string, 0, len(base))
	for _, kv := range base {
		path, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			clean = append(clean, kv)
		} else if dirs := pathDirs(path, true); len(dirs) > 0 {
			clean = append(clean, "PATH="+strings.Join(dirs, string(filepath.ListSeparator)))
		}
	}
	return clean
}

// Verdict says how a check ended in a few words: "pass", "fail, exit 2",
// "timeout after 10s", "error: …", with ", optional" for a failing check
// that does not block.
func (r Result) Verdict() string {
	var status string
	switch {
	case r.Stopped:
		return "stopped before it ended"
	case r.Err != nil:
		return fmt.Sprintf("error: %v", r.Err)
	case r.Passed:
		status = "pass"
	case r.TimedOut:
		status = fmt.Sprintf("timeout after %v", r.Timeout)
	default:
		status = fmt.Sprintf("fail, exit %d", r.ExitCode)
	}
	if !r.Passed && !r.Required {
		status += ", optional"
	}
	return status
}

// Summary says in one line how a check ended: "check test: pass (2.1s)".
func (r Result) Summary() string {
	if r.Err != nil {
		return fmt.Sprintf("check %s: %s", r.Name, r.Verdict())
	}
	return fmt.Sprintf("check %s: %s (%s)", r.Name, r.Verdict(), roundDuration(r.Duration))
}

// roundDuration keeps a progress line short: 2.1s, 350ms.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// maxExcerptLine is how long a line of an excerpt may be, in bytes.
const maxExcerptLine = 200

// Excerpt returns the last maxLines lines of out, each line cut to 200
// bytes, for the ledger and prompts. Trailing blank lines are dropped first,
// so the excerpt ends with the output's last words. A runner's colours are
// left out, and so is every other escape sequence or control character
// but tab: the ledger would keep each escape as an unreadable character,
// and a terminal showing the excerpt would obey the rest of it (a clear
// screen, a cursor moved, its title or the clipboard set). A line that carriage returns redraw (a progress
// bar) is kept as a terminal shows it in the end: its last part (see
// ansi.Redrawn); a CRLF is a line end.
func Excerpt(out string, maxLines int) string {
	if maxLines <= 0 {
		return ""
	}
	lines := strings.Split(strings.ReplaceAll(ansi.String(out), "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = ansi.Printable(ansi.Redrawn(l))
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	for i, l := range lines {
		lines[i] = cutLine(l)
	}
	return strings.Join(lines, "\n")
}

// Excerpt is Excerpt(r.Output, maxLines), but for a check that failed
// with nothing in its output to show: then it says how the check ended,
// "(exited 3, no output)", as a failure shown with nothing to act on tells
// neither the agent nor a person where to start. A timed-out check's
// excerpt says only "(no output)": whatever shows it says it timed out.
func (r Result) Excerpt(maxLines int) string {
	x := Excerpt(r.Output, maxLines)
	if x != "" || maxLines <= 0 || r.Passed || r.Err != nil || r.Stopped {
		return x
	}
	what := "no output"
	if r.Output != "" {
		what = "blank output"
	}
	if r.TimedOut {
		return "(" + what + ")"
	}
	return fmt.Sprintf("(exited %d, %s)", r.ExitCode, what)
}

// cutLine cuts l to maxExcerptLine bytes on a rune boundary, marking the cut.
func cutLine(l string) string { return textcut.Head(l, maxExcerptLine, "…") }

// lineCounter counts the line ends written to it.
type lineCounter int

func (n *lineCounter) Write(p []byte) (int, error) {
	*n += lineCounter(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}
