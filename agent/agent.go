// Package agent runs one coding agent process: it starts the agent in its own
// process group with the prompt on stdin or as an argument, streams the
// agent's output to the terminal while scanning it for the final message,
// tokens and cost, enforces a hard and an idle timeout, and makes sure the
// agent and everything it started are gone when Run returns.
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ralph-harness/ralph/internal/proc"
	"github.com/ralph-harness/ralph/internal/tail"
)

// Format says how the agent's standard output is to be read.
type Format int

const (
	// Text is plain output; the final message is the tail of stdout.
	Text Format = iota
	// ClaudeStreamJSON is the output of
	// `claude -p --output-format stream-json --verbose`: one JSON event per line.
	ClaudeStreamJSON
	// CodexJSON is the output of `codex exec --json`: JSON Lines events.
	CodexJSON
	// GeminiStreamJSON is the output of `gemini -o stream-json`.
	GeminiStreamJSON
	// OpenCodeJSON is the output of `opencode run --format json`.
	OpenCodeJSON
)

// readers make the stdout reader of each format, given where to show the
// output and the clock that resolves relative reset times.
var readers = map[Format]func(shown io.Writer, now func() time.Time) stdoutReader{
	Text:             func(w io.Writer, _ func() time.Time) stdoutReader { return newTextReader(w) },
	ClaudeStreamJSON: func(w io.Writer, now func() time.Time) stdoutReader { return newClaudeReader(w, now) },
	CodexJSON:        func(w io.Writer, now func() time.Time) stdoutReader { return newCodexReader(w, now) },
	GeminiStreamJSON: func(w io.Writer, now func() time.Time) stdoutReader { return newGeminiReader(w, now) },
	OpenCodeJSON:     func(w io.Writer, now func() time.Time) stdoutReader { return newOpenCodeReader(w, now) },
}

// String returns the format's name.
func (f Format) String() string {
	switch f {
	case Text:
		return "text"
	case ClaudeStreamJSON:
		return "claude-stream-json"
	case CodexJSON:
		return "codex-json"
	case GeminiStreamJSON:
		return "gemini-stream-json"
	case OpenCodeJSON:
		return "opencode-json"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ReportsCost reports whether output of the format can say what a run
// cost: codex's and gemini's say only their tokens, and plain text nothing.
func (f Format) ReportsCost() bool {
	return f == ClaudeStreamJSON || f == OpenCodeJSON
}

// ReportsTokens reports whether output of the format can say how many
// tokens a run spent: all but plain text.
func (f Format) ReportsTokens() bool { return f != Text }

// Reasons for Result.Stopped.
const (
	StoppedTimeout     = "timeout"
	StoppedIdle        = "idle"
	StoppedInterrupted = "interrupted"
)

// Bounds on what is kept of the agent's output.
const (
	MaxFinalMessage = 64 << 10
	maxStderr       = 4 << 10
)

// Options describe one agent run.
type Options struct {
	Argv        []string         // program and arguments; the prompt is appended when PromptArg
	Dir         string           // working directory
	Env         []string         // the complete environment of the child (see Environ)
	Prompt      string           // the prompt
	PromptArg   bool             // true: prompt as the last argument and stdin is /dev/null; false: prompt on stdin, then stdin closed
	PromptFlag  string           // with PromptArg: a flag put just before the prompt (copilot's -p), or joined to it (gemini's --prompt=)
	Timeout     time.Duration    // hard limit (0: none)
	IdleTimeout time.Duration    // no output (stdout or stderr) for this long: stopped (0: none)
	Grace       time.Duration    // SIGINT → SIGKILL delay (0: 5s)
	Now         func() time.Time // the clock for Duration; nil: time.Now (timeouts always use real time)
	Output      io.Writer        // where the agent's output is shown live (the terminal, or io.Discard); nil discards
	Format      Format           // how stdout is read
}

// Result is what ralph learnt from one agent run.
type Result struct {
	ExitCode     int           // exit status; 128+sig when killed by a signal; -1 if it never started
	Duration     time.Duration // from start until the agent and its group were gone
	FinalMessage string        // the agent's final message, at most MaxFinalMessage bytes (the tail for Text)
	InputTokens  int64         // the run's input tokens, cached ones included, as its format reports them
	OutputTokens int64         // the run's output tokens
	CostUSD      float64       // for Claude: total_cost_usd of the result event
	CostKnown    bool          // CostUSD was reported by the agent
	Stopped      string        // "" | "timeout" | "idle" | "interrupted" (ctx cancelled)
	APIError     bool          // the run ended in an error of the model's service (Claude's is_error, codex's turn.failed, …)
	Stderr       string        // last 4 KiB of stderr, for error messages
	// Lingered: the agent ran on after its final event and was stopped;
	// what it said stands.
	Lingered bool
	// Problem is a failure of the model or its service (a rate limit, a
	// server error, a bad key) rather than of the work; nil when none.
	Problem *Problem
}

// NotFoundError is returned when the program cannot be started because it
// does not exist: there is something to install.
type NotFoundError struct {
	Program string
	Err     error
}

// Error says which program is missing and why, e.g. `agent program "claude"
// not found: exec: "claude": executable file not found in $PATH`.
func (e *NotFoundError) Error() string {
	return fmt.Sprintf("agent program %q not found: %v", e.Program, e.Err)
}

// Unwrap returns the lookup error.
func (e *NotFoundError) Unwrap() error { return e.Err }

// CannotRunError is returned when the program is there but cannot be run:
// a directory, a file without the execute permission, a script whose #!
// line names an interpreter that is not there. Installing the program
// would not help: what names it, or the file itself, must change.
type CannotRunError struct {
	Program string
	// Why says what is wrong, and what to do when ralph can tell, e.g.
	// "is not executable: chmod +x ./agent.sh".
	Why string
	Err error
}

// Error names the program and says what is wrong with it, e.g. `agent
// program "./agent.sh" is not executable: chmod +x ./agent.sh`.
func (e *CannotRunError) Error() string {
	return fmt.Sprintf("agent program %q %s", e.Program, e.Why)
}

// Unwrap returns the lookup error.
func (e *CannotRunError) Unwrap() error { return e.Err }

// Run starts the agent, feeds the prompt, streams its output to o.Output
// while scanning it (ending its last line when the agent did not), enforces
// the timeouts, and returns when the process (and its group) is gone. A
// non-zero exit, a timeout or an interruption is not an error: it is
// reported in Result. Errors are only for failing to start
// (*NotFoundError for a missing program) or setting up I/O.
func Run(ctx context.Context, o Options) (Result, error) {
	res := Result{ExitCode: -1}
	if len(o.Argv) == 0 {
		return res, errors.New("run agent: empty command")
	}
	prog := o.Argv[0]
	// The #! line was read where the settings were (see Find): not again
	// in every iteration of a run of days.
	if _, err := lookup(prog, o.Dir); err != nil {
		return res, err
	}
	if ctx.Err() != nil {
		res.Stopped = StoppedInterrupted
		return res, nil
	}

	shown := &lockedWriter{w: o.Output}
	if o.Output == nil {
		shown.w = io.Discard
	}
	var act activity
	stderr := tail.New(maxStderr)
	newReader, ok := readers[o.Format]
	if !ok {
		return res, fmt.Errorf("run agent %s: no reader for output format %v", prog, o.Format)
	}

	argv := o.Argv
	var stdin io.Reader
	if o.PromptArg {
		args, err := promptArgs(o.PromptFlag, o.Prompt)
		if err != nil {
			return res, fmt.Errorf("run agent %s: %w", prog, err)
		}
		argv = append(argv[:len(argv):len(argv)], args...)
	} else {
		stdin = strings.NewReader(o.Prompt)
	}

	// A known CLI's noise on stderr is not shown (see stderrNoise).
	var shownStderr io.Writer = shown
	var noise *lineDropper
	if line, ok := stderrNoise[o.Format]; ok {
		noise = &lineDropper{w: shown, line: line}
		shownStderr = noise
	}

	now := o.Now
	if now == nil {
		now = time.Now
	}
	out := newReader(shown, now)
	start := now()
	// Timeouts run on the real clock, whatever o.Now says.
	act.touch(time.Now())
	// What the pipes carry after the agent exited is not its output but
	// that of something it left running (a child that called setsid,
	// until the grace period is over): shown, and read for nothing, not
	// for its reply nor for its problems.
	late := &lateOutput{shown: shown}
	p, err := proc.Start(ctx, proc.Config{
		Argv:       argv,
		Dir:        o.Dir,
		Env:        o.Env,
		Stdin:      stdin,
		Stdout:     &activityWriter{act: &act, w: out},
		Stderr:     &activityWriter{act: &act, w: io.MultiWriter(stderr, shownStderr)},
		LateStdout: late,
		LateStderr: late,
		Grace:      o.Grace,
	})
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return res, &NotFoundError{Program: prog, Err: err}
		}
		// A stop that came as the agent was starting kept it from
		// starting: nothing failed.
		if ctx.Err() != nil {
			res.Stopped = StoppedInterrupted
			return res, nil
		}
		return res, fmt.Errorf("run agent: %w", err)
	}

	var timeout, idle <-chan time.Time
	if o.Timeout > 0 {
		t := time.NewTimer(o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var idleTimer *time.Timer
	if o.IdleTimeout > 0 {
		idleTimer = time.NewTimer(o.IdleTimeout)
		defer idleTimer.Stop()
		idle = idleTimer.C
	}
	timers := [2]<-chan time.Time{timeout, idle}
	stop := func(reason string) {
		res.Stopped = reason
		timeout, idle = nil, nil
		p.Stop()
	}
	// Once a format's final event has come, the run is over: an agent that
	// lingers after it (a background process, a hung plugin) gets a moment
	// to exit by itself and is then stopped, keeping what it said.
	e, _ := out.(ender)
	var ended <-chan struct{}
	if e != nil {
		ended = e.ended()
	}
	var linger <-chan time.Time
	var lingering <-chan struct{} // the end the linger follows
	exited := p.Exited()
wait:
	for {
		select {
		case <-p.Done():
			break wait
		case <-exited:
			// The agent is gone: what is left is the output that a
			// process it left running (setsid) may write for the grace
			// period at most, which stops nothing and times nothing out,
			// as for the checks.
			exited = nil
			timeout, idle, linger, ended = nil, nil, nil, nil
		case <-ended:
			// The run is over: the linger decides from now on, not the
			// timeouts, which would throw the result away.
			lingering, ended = ended, nil
			timeout, idle = nil, nil
			linger = time.After(Linger)
		case <-linger:
			linger = nil
			if now := e.ended(); now != lingering && res.Stopped == "" {
				// The run went on after that end (opencode's next
				// step): it is watched as before, until its next.
				ended = now
				timeout, idle = timers[0], timers[1]
				continue
			}
			res.Lingered = true
			timeout, idle = nil, nil
			p.Stop()
		case <-timeout:
			stop(StoppedTimeout)
		case now := <-idle:
			// The timer is not reset on every byte; when it fires, it is
			// re-armed for the rest of the period since the last output.
			if quiet := now.Sub(act.last()); quiet >= o.IdleTimeout {
				stop(StoppedIdle)
			} else {
				idleTimer.Reset(o.IdleTimeout - quiet)
			}
		}
	}
	res.ExitCode = p.Wait()
	res.Duration = now().Sub(start)
	sawEnd := false
	if e != nil {
		select {
		case <-e.ended():
			sawEnd = true // before the exit, or with it
		default:
		}
	}
	if res.Stopped == "" && ctx.Err() != nil {
		// proc stopped the agent on ctx's behalf.
		res.Stopped = StoppedInterrupted
	}
	out.finish(&res)
	if noise != nil {
		noise.flush()
	}
	shown.endLine()
	res.Stderr = stderr.String()
	// Only a known CLI that failed is asked why, on what the CLI itself
	// says. A plain command's stderr is the work's own output as much as
	// the agent's ("want status 401"), so it is never read for problems;
	// nor is a CLI's whose final event said it succeeded: its exit status
	// (ralph's stop after the linger, say) and its stderr's noise (a
	// plugin that failed to connect) do not undo the result.
	switch {
	case res.Problem != nil || res.Stopped != "" || o.Format == Text:
	case res.APIError:
		res.Problem = Classify(res.Stderr+"\n"+lastBytes(res.FinalMessage, maxStderr), now())
	case res.ExitCode != 0 && !sawEnd:
		res.Problem = Classify(res.Stderr, now())
		if res.Problem == nil && o.Format == GeminiStreamJSON {
			res.Problem = geminiFatal(res.ExitCode, res.Stderr)
		}
	}
	// A known CLI may say when a limit lifts on its stderr alone (gemini's
	// "Please retry in 3600s" after its last try), not in the event that
	// reports it.
	if p := res.Problem; p != nil && p.Kind == RateLimited && p.ResetAt.IsZero() && o.Format != Text {
		p.ResetAt = resetTime(res.Stderr, now())
	}
	// Wherever the reset came from (an event, a header, words), it is
	// at most MaxWait ahead: the loop sleeps until it.
	if p := res.Problem; p != nil && !p.ResetAt.IsZero() {
		p.ResetAt = capped(p.ResetAt, now())
	}
	return res, nil
}

// MaxArg is the longest argument a program can be given (Linux's limit on
// one argument, its terminating NUL aside): a prompt passed as an argument
// must fit.
const MaxArg = 128<<10 - 1

// CheckPromptArg returns an error, saying what to do, when the prompt, with
// the flag before it (see PromptArgs), is too long to be one argument.
func CheckPromptArg(flag, prompt string) error {
	_, err := promptArgs(flag, prompt)
	return err
}

// promptArgs returns PromptArgs, or CheckPromptArg's error.
func promptArgs(flag, prompt string) ([]string, error) {
	args := PromptArgs(flag, prompt)
	if n := len(args[len(args)-1]); n > MaxArg {
		return nil, fmt.Errorf("the prompt is %d bytes, and one argument holds at most %d: shorten the story (its description, criteria, answers), or give the agent its prompt on stdin (agent.prompt = \"stdin\") if it reads it there", n, MaxArg)
	}
	return args, nil
}

// Find checks that prog can be executed the way Run will run it: by
// searching $PATH for a bare name, or as a path relative to dir (where the
// agent starts) when it contains a slash. It returns a *NotFoundError for
// a program that is not there, a *CannotRunError for one that is and
// cannot run (see CannotRunError).
func Find(prog, dir string) error {
	found, err := lookup(prog, dir)
	if err != nil {
		return err
	}
	if why, err := interpreter(found, dir); why != "" {
		return &CannotRunError{Program: prog, Why: "cannot run: " + why, Err: err}
	}
	return nil
}

// lookup is Find but for the #! line: it returns where prog is.
func lookup(prog, dir string) (string, error) {
	path := inDir(prog, dir)
	found, err := exec.LookPath(path)
	switch {
	case errors.Is(err, exec.ErrDot):
		// Only a relative directory in $PATH has it ("bin", "."), which
		// names another directory wherever ralph starts: often the work
		// directory, where the agent writes, and a program left there
		// would run as the agent. Go's exec does not run what such an
		// entry finds, and ralph does not either; it says so, and how to
		// name the program instead, rather than "not found, install it".
		return "", &CannotRunError{Program: prog, Why: foundRelative(found, dir), Err: err}
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, exec.ErrNotFound):
		return "", &NotFoundError{Program: prog, Err: err}
	case errors.Is(err, syscall.EISDIR):
		return "", &CannotRunError{Program: prog, Why: "is a directory: agent.command must name a program", Err: err}
	case errors.Is(err, fs.ErrPermission):
		if info, serr := os.Stat(path); serr == nil && info.Mode()&0o111 == 0 {
			return "", &CannotRunError{Program: prog, Why: "is not executable: chmod +x " + shellWord(path), Err: err}
		}
		// Executable, and still refused: not this user's to run, or on
		// a file system mounted noexec.
		return "", &CannotRunError{Program: prog, Why: "cannot run: permission denied", Err: err}
	case err != nil:
		return "", &NotFoundError{Program: prog, Err: err}
	}
	return found, nil
}

// foundRelative says that a program was found at found, relative to
// ralph's current directory, through a relative directory in $PATH, and
// what to set instead: its path relative to dir, where the agent starts,
// when it is in dir, or else its absolute path.
func foundRelative(found, dir string) string {
	path, err := filepath.Abs(found)
	if err != nil {
		path = found
	}
	if abs, err := filepath.Abs(dir); err == nil && dir != "" {
		if rel, err := filepath.Rel(abs, path); err == nil && filepath.IsLocal(rel) {
			path = "./" + filepath.ToSlash(rel)
		}
	}
	return fmt.Sprintf("is found only through a relative directory in $PATH (%q), which ralph does not run programs from: put the directory in PATH as an absolute path, or set agent.command = [%q]",
		filepath.Dir(found), path)
}

// shellWord quotes s for a shell when it holds more than letters, digits
// and ./_+-: a path to paste into a command.
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("./_+-", r)))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// inDir returns prog as a path relative to dir, when prog is a relative
// path; a bare name, for $PATH, stays as it is.
func inDir(prog, dir string) string {
	if !strings.Contains(prog, "/") || filepath.IsAbs(prog) || dir == "" {
		return prog
	}
	// Join cleans "./x" in "." down to "x", which LookPath would look for
	// in $PATH.
	path := filepath.Join(dir, prog)
	if !strings.Contains(path, "/") {
		path = "./" + path
	}
	return path
}

// shebangMax is how much of a script the system reads for its #! line
// (Linux's BINPRM_BUF_SIZE).
const shebangMax = 256

// interpreter checks the interpreter that path's #! line names, if it has
// one, as the system will when the agent starts: otherwise the start fails
// with the script's own name and "no such file or directory". It says what
// is wrong, or "" when nothing is (or it cannot tell: a file it may not
// read, a line too long to see whole).
func interpreter(path, dir string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil
	}
	defer f.Close()
	buf := make([]byte, shebangMax)
	n, _ := io.ReadFull(f, buf)
	line, ok := bytes.CutPrefix(buf[:n], []byte("#!"))
	switch {
	case ok:
	case n == 0:
		return "it is empty", nil
	case utf8.Valid(buf[:n]) && !bytes.ContainsRune(buf[:n], 0):
		// Text: a script, which a shell would run with sh, and the system
		// will not run at all (a program's first bytes hold a zero).
		return "it is a script with no #! line: make its first line one (#!/bin/sh)", nil
	default:
		return "", nil
	}
	line, _, found := bytes.Cut(line, []byte("\n"))
	if !found && n == shebangMax {
		return "", nil
	}
	// The system takes the interpreter up to a space or a tab: a \r
	// (a file with Windows line ends) is part of its name.
	fields := strings.FieldsFunc(string(line), func(r rune) bool { return r == ' ' || r == '\t' })
	if len(fields) == 0 {
		return "its #! line names no interpreter", nil
	}
	name := fields[0]
	shown := name
	if strings.ContainsFunc(name, unicode.IsControl) {
		shown = strconv.Quote(name)
	}
	// A relative one is relative to where the agent starts.
	at := name
	if !filepath.IsAbs(at) && dir != "" {
		at = filepath.Join(dir, at)
	}
	info, err := os.Stat(at)
	switch {
	case errors.Is(err, fs.ErrNotExist) && strings.HasSuffix(name, "\r"):
		return "its interpreter " + shown + " (its #! line) is not found: the file has Windows line ends (CRLF)", err
	case errors.Is(err, fs.ErrNotExist):
		return "its interpreter " + shown + " (its #! line) is not found: install it, or correct the #! line", err
	case err != nil:
		return "", nil
	case info.IsDir():
		return "its interpreter " + shown + " (its #! line) is a directory", nil
	case info.Mode()&0o111 == 0:
		return "its interpreter " + shown + " (its #! line) is not executable", nil
	}
	return "", nil
}

// Linger is how long an agent may run on after its final event.
var Linger = 5 * time.Second

// An ender is a reader of a format with a final event: ended is closed once
// that event has come. A format whose run may go on after such an event
// (see lastEvent) returns a new channel once it has.
type ender interface {
	ended() <-chan struct{}
}

// finalEvent makes a reader an ender: it calls end at its format's final
// event (from the one goroutine that writes to it).
type finalEvent struct{ done chan struct{} }

func newFinalEvent() finalEvent { return finalEvent{done: make(chan struct{})} }

func (f finalEvent) end() {
	select {
	case <-f.done:
	default:
		close(f.done)
	}
}

func (f finalEvent) ended() <-chan struct{} { return f.done }

// lastEvent makes a reader an ender for a format whose event that may end
// the run can be followed by more of it: opencode's step that finished
// without calling tools is its last, unless opencode goes on to another
// (after compacting the conversation, say). end closes the current
// channel; reopen, as more of the run comes, puts an open one in place of
// a closed one, and Run, finding that ended's channel changed when its
// linger is over, watches the run again.
type lastEvent struct {
	mu   sync.Mutex
	done chan struct{}
}

func newLastEvent() *lastEvent { return &lastEvent{done: make(chan struct{})} }

func (l *lastEvent) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
	default:
		close(l.done)
	}
}

func (l *lastEvent) reopen() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
		l.done = make(chan struct{})
	default:
	}
}

func (l *lastEvent) ended() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// stdoutReader consumes the agent's stdout as it arrives.
type stdoutReader interface {
	io.Writer
	// finish is called once stdout is closed and fills in what was learnt.
	finish(*Result)
}

// textReader shows stdout as it is and keeps its tail as the final message.
type textReader struct {
	shown io.Writer
	tail  *tail.Buffer
}

func newTextReader(shown io.Writer) *textReader {
	return &textReader{shown: shown, tail: tail.New(MaxFinalMessage)}
}

func (r *textReader) Write(p []byte) (int, error) {
	r.shown.Write(p)
	return r.tail.Write(p)
}

func (r *textReader) finish(res *Result) { res.FinalMessage = r.tail.String() }

// lateOutput shows what came after the agent exited, below a line that
// says so.
type lateOutput struct {
	shown *lockedWriter
	once  sync.Once
}

func (l *lateOutput) Write(p []byte) (int, error) {
	l.once.Do(func() {
		l.shown.endLine()
		io.WriteString(l.shown, "[ralph: printed after the agent exited, by a process it left running: shown, not read]\n")
	})
	return l.shown.Write(p)
}

// activity records when the agent last wrote anything.
type activity struct{ nanos atomic.Int64 }

func (a *activity) touch(t time.Time) { a.nanos.Store(t.UnixNano()) }
func (a *activity) last() time.Time   { return time.Unix(0, a.nanos.Load()) }

// activityWriter marks activity on every write before passing it on.
type activityWriter struct {
	act *activity
	w   io.Writer
}

func (w *activityWriter) Write(p []byte) (int, error) {
	w.act.touch(time.Now())
	return w.w.Write(p)
}

// lockedWriter serialises the writes of the stdout and stderr goroutines to
// the terminal, and ignores its errors: a terminal that went away must not
// stop ralph from scanning the output.
type lockedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	midLine bool // the last write did not end its line
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.w.Write(p)
	if len(p) > 0 {
		w.midLine = p[len(p)-1] != '\n'
	}
	return len(p), nil
}

// endLine ends the last line of the output when the agent left it
// unfinished: ralph's next line on the terminal (`[ralph] agent exited…`,
// or `ralph: stopped: …` under --json) must start a line of its own, where
// scripts look for it.
func (w *lockedWriter) endLine() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.midLine {
		io.WriteString(w.w, "\n")
		w.midLine = false
	}
}

// event decodes one line of a JSON Lines stream. Fields are left raw, so
// that one field of an unexpected type does not cost the others. A blank
// line gives neither; a line that is no JSON object (a warning, a log
// line) comes back as text, to be shown as it is.
func event(b []byte) (ev map[string]json.RawMessage, text []byte) {
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(b, &ev); err != nil || ev == nil {
		return nil, append(b[:len(b):len(b)], '\n')
	}
	return ev, nil
}

// view is where a reader shows the agent's output, made readable.
type view struct {
	shown io.Writer
}

// decode decodes one line of the agent's stdout as event does, and shows a
// line that is no JSON object as it is.
func (v view) decode(b []byte) map[string]json.RawMessage {
	ev, text := event(b)
	if text != nil {
		v.shown.Write(text)
	}
	return ev
}

func (v view) printf(format string, args ...any) {
	fmt.Fprintf(v.shown, format, args...)
}

// showText shows what the model said, ending its last line.
func (v view) showText(s string) {
	io.WriteString(v.shown, s)
	if !strings.HasSuffix(s, "\n") {
		v.printf("\n")
	}
}

// started shows that the agent's session started, with its model when the
// CLI says which.
func (v view) started(model string) {
	if model = oneLine(model); model != "" {
		v.printf("● session started: %s\n", model)
		return
	}
	v.printf("● session started\n")
}

// toolLine is how a tool call is shown: its name ("tool" when it has none)
// and what it does, when that can be said on one line.
func toolLine(name, summary string) string {
	if name = oneLine(name); name == "" {
		name = "tool"
	}
	if summary == "" {
		return "→ " + name
	}
	return "→ " + name + ": " + summary
}

// passedOver says that a format's final event came again, after the run
// had ended at the first: it is not read.
func (v view) passedOver(event string) {
	v.printf("[ralph: passed over a %s event after the run's end]\n", event)
}

// longLine says that a line too long to hold was passed over.
func (v view) longLine(n int64) {
	v.printf("[ralph: passed over an output line of %d bytes]\n", n)
}
