// Package checks runs the project's checks (tests, linters, builds) the way
// ralph judges an iteration: by itself, never on the agent's word. Checks run
// concurrently, but for those that wait for another (Check.After), each in
// its own process group with its own timeout, and only the tail of their
// output is kept, for the ledger and the next prompt.
package checks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	// After names the checks that must have ended, and passed, before
	// this one starts (see Run).
	After []string
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
	// NotRun says that the check was not run, as one it waits for (see
	// Check.After) did not pass; Err says which. It failed.
	NotRun bool
}

// Options say where and how checks run.
type Options struct {
	Dir string
	// Env is the complete environment (nil: ralph's own), but for the
	// directories of its $PATH that the agent can write, which the checks
	// run without (see Run).
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
// A check with After starts only once every check it names has ended, and
// runs only if they all passed: a check that needs a build would otherwise
// race it and pass on what an older build left. When one of them did not
// pass, the check is not run and fails (Result.NotRun), whether or not the
// one it waited for was required: run on a failed build, it would judge
// stale output just the same. A name in After that is not in cs is left
// out, so that a subset of the checks can run; checks
// that wait for each other in a circle are not run. Every other check
// starts at once.
//
// The checks run without the directories of $PATH that are relative or in
// the work directory (WorkPath): sh finds a program through one in the
// work directory, which the agent writes, and a grep it left in
// ./node_modules/.bin would pass a check that greps for its work.
func Run(ctx context.Context, cs []Check, o Options) []Result {
	o.Env = OutsidePath(o.Env, o.Dir)
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

	// waits[i] counts the checks cs[i] still waits for; next[j] lists the
	// checks that wait for cs[j].
	index := make(map[string]int, len(cs))
	for i, c := range cs {
		if _, dup := index[c.Name]; !dup {
			index[c.Name] = i
		}
	}
	waits := make([]int, len(cs))
	next := make([][]int, len(cs))
	for i, c := range cs {
		for _, name := range c.After {
			if j, ok := index[name]; ok && !slices.Contains(next[j], i) {
				waits[i]++
				next[j] = append(next[j], i)
			}
		}
	}

	// One goroutine hands out the slots: a check is started when it waits
	// for nothing and a slot is free, the first of cs first, so that
	// Parallel: 1 runs them one after the other as listed.
	ended := make(chan int)
	finished := make([]bool, len(cs))
	var ready []int
	left := len(cs)
	var end func(i int)
	end = func(i int) {
		finished[i] = true
		left--
		for _, k := range next[i] {
			if waits[k]--; waits[k] > 0 || finished[k] {
				continue
			}
			if r, run := after(ctx, cs[k], index, results); !run {
				results[k] = r
				report(k)
				end(k)
				continue
			}
			ready = append(ready, k)
			slices.Sort(ready)
		}
	}
	for i := range cs {
		if waits[i] == 0 {
			ready = append(ready, i)
		}
	}
	running := 0
	stopped := false
	for left > 0 {
		for !stopped && running < parallel && len(ready) > 0 {
			i := ready[0]
			ready = ready[1:]
			running++
			go func() {
				results[i] = runOne(ctx, i, cs[i], o)
				report(i)
				ended <- i
			}()
		}
		if running == 0 && (stopped || len(ready) == 0) {
			// What is left waits in a circle (or ctx ended): none of it
			// can start.
			for i, c := range cs {
				if finished[i] {
					continue
				}
				if stopped {
					results[i] = stoppedResult(c, ctx.Err())
				} else {
					results[i] = notRun(c, "it waits for itself through after")
				}
				report(i)
				finished[i] = true
				left--
			}
			break
		}
		select {
		case i := <-ended:
			running--
			end(i)
		case <-ctx.Done():
			stopped = true
			// The running checks end on their own, ctx stopped them.
			i := <-ended
			running--
			end(i)
		}
	}
	return results
}

// after returns whether c is to run, now that every check it waits for
// has ended; if not, its result says why.
func after(ctx context.Context, c Check, index map[string]int, results []Result) (Result, bool) {
	for _, name := range c.After {
		j, ok := index[name]
		if !ok {
			continue
		}
		r := results[j]
		switch {
		case r.Stopped:
			return stoppedResult(c, ctx.Err()), false
		case !r.Passed:
			return notRun(c, name+" "+r.ended()), false
		}
	}
	return Result{}, true
}

// stoppedResult is the result of c when ctx ended (err) before it started.
func stoppedResult(c Check, err error) Result {
	return Result{Check: c, ExitCode: -1, Err: fmt.Errorf("run check %s: %w", c.Name, err), Stopped: true}
}

// notRun is the result of c when it was not run: why says why.
func notRun(c Check, why string) Result {
	return Result{Check: c, ExitCode: -1, Err: errors.New("not run: " + why), NotRun: true}
}

// ended says in a few words how a check that did not pass ended, after its
// name: "build failed".
func (r Result) ended() string {
	switch {
	case r.NotRun:
		return "was not run"
	case r.Err != nil:
		return "could not start"
	case r.TimedOut:
		return "timed out"
	}
	return "failed"
}

func runOne(ctx context.Context, i int, c Check, o Options) Result {
	res := Result{Check: c, ExitCode: -1}
	if ctx.Err() != nil {
		// A free slot and a cancelled ctx may both have been ready.
		return stoppedResult(c, ctx.Err())
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

// WorkPath returns the directories of the $PATH in env that the agent can
// write, each once, in order: those that are not absolute, which are
// found from the current directory, the work directory dir
// ("./node_modules/.bin", "bin", and "" for an empty entry: a leading,
// trailing or doubled colon), and the absolute ones in dir
// ("/home/a/proj/node_modules/.bin"), as written or with symbolic links
// resolved. The checks run without them (see Run).
func WorkPath(env []string, dir string) []string {
	var found []string
	w := workDirOf(dir)
	for _, kv := range env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range pathDirs(path, w, true) {
				if !slices.Contains(found, d) {
					found = append(found, d)
				}
			}
		}
	}
	return found
}

// workDir is the work directory as an absolute path, and with its symbolic
// links resolved; both "" when it is not known.
type workDir struct{ abs, real string }

func workDirOf(dir string) workDir {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return workDir{}
	}
	w := workDir{abs: abs, real: abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		w.real = real
	}
	return w
}

// holds reports whether the agent can write the $PATH directory entry:
// it is not absolute, or it is in w. A link to the work directory, or to a
// directory in it, is resolved: the agent writes there all the same.
func (w workDir) holds(entry string) bool {
	if !filepath.IsAbs(entry) {
		return true
	}
	if w.abs == "" {
		return false
	}
	entry = filepath.Clean(entry)
	return within(entry, w.abs) || within(entry, w.real) || within(resolve(entry), w.real)
}

// within reports whether path is dir or in it; both are clean and
// absolute.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolve returns the clean absolute path with its symbolic links
// resolved, as far as it exists: a directory of $PATH the agent has yet to
// create is where its parent's link leads.
func resolve(path string) string {
	var rest []string
	for {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(path)
		if parent == path {
			return filepath.Join(append([]string{path}, rest...)...)
		}
		rest = append([]string{filepath.Base(path)}, rest...)
		path = parent
	}
}

// pathDirs returns the directories of a $PATH that the agent can write
// (see workDir.holds), or those that it cannot.
func pathDirs(path string, w workDir, agents bool) []string {
	var dirs []string
	for dir := range strings.SplitSeq(path, string(filepath.ListSeparator)) {
		if w.holds(dir) == agents {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// OutsidePath returns env (nil: ralph's own) with the directories the
// agent can write left out of its $PATH (see WorkPath); nil when env is
// nil and has none. A $PATH left with none at all is left out: an empty
// one is the current directory to a shell, and sh without one searches
// its default directories.
func OutsidePath(env []string, dir string) []string {
	base := env
	if base == nil {
		base = os.Environ()
	}
	w := workDirOf(dir)
	clean := make([]string, 0, len(base))
	dropped := false
	for _, kv := range base {
		path, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			clean = append(clean, kv)
			continue
		}
		dirs := pathDirs(path, w, false)
		if len(dirs) == strings.Count(path, string(filepath.ListSeparator))+1 {
			clean = append(clean, kv) // none the agent can write
			continue
		}
		dropped = true
		if len(dirs) > 0 {
			clean = append(clean, "PATH="+strings.Join(dirs, string(filepath.ListSeparator)))
		}
	}
	if !dropped {
		return env
	}
	return clean
}

// LookPath finds the program name as exec.LookPath does, in the
// directories of ralph's $PATH that are neither relative nor in the work
// directory dir (see WorkPath), for a program ralph runs itself there: a
// git the agent left in a directory of the project that $PATH names must
// not list the files ralph guards, or commit its work.
func LookPath(name, dir string) (string, error) {
	for _, d := range pathDirs(os.Getenv("PATH"), workDirOf(dir), false) {
		if path, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return path, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// Verdict says how a check ended in a few words: "pass", "fail, exit 2",
// "timeout after 10s", "not run: build failed", "error: …", with ", optional" for a failing check
// that does not block.
func (r Result) Verdict() string {
	var status string
	switch {
	case r.Stopped:
		return "stopped before it ended"
	case r.NotRun:
		status = r.Err.Error()
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
