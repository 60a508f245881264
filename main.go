// Command ralph runs a coding agent in a loop until a task list is done,
// judging each iteration itself by running the project's checks.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/agent"
	"github.com/ralph-harness/ralph/internal/lazyre"
	"github.com/ralph-harness/ralph/internal/proc"
	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/internal/redact"
	"github.com/ralph-harness/ralph/loop"
)

// Exit codes: the contract with scripts (see README).
const (
	exitOK          = 0
	exitRuntime     = 1
	exitUsage       = 2
	exitLimit       = 3
	exitStalled     = 4
	exitNeedsHuman  = 5
	exitInterrupted = 130
	// exitQuit is how SIGQUIT ends the commands that do not stop on
	// signals (see endOnQuit): as a shell reports a program it ended.
	exitQuit = 128 + 3
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr, env{}))
}

// env holds what tests inject into a run of the command.
type env struct {
	// now replaces the clock, so that golden files are byte-stable.
	now func() time.Time
	// jitter replaces the random spread of backoff waits.
	jitter func(time.Duration) time.Duration
}

// run is the whole command: it returns the exit code instead of exiting, so
// that deferred writes and child cleanup always run.
//
// What goes where: results (tables, prompts, --json) go to stdout, and so do
// the loop's narration and the agent's streamed output; diagnostics go to
// stderr as "ralph: error: …", optionally followed by "ralph: hint: …" lines.
func run(args []string, stdout, stderr io.Writer, e env) int {
	// A write into a pipe whose reader is gone fails with EPIPE instead of
	// raising SIGPIPE, which would end ralph at once, with 141, in
	// whatever it was doing (init between two of its files): each command
	// ends as it would otherwise, and one whose only trouble is that
	// nobody reads its output any more ends quietly with exit 0 (see
	// exitCode), as `ralph status | head -1` should. SIGPIPE stays caught
	// until ralph exits, so that its last words into a closed pipe (an
	// error, with 2>&1) do not end it with 141 in place of its own exit
	// status. Caught, it is at its default again in the programs ralph
	// starts. (The loop stops when its reader is gone, but it learns that
	// from its own writes, not from SIGPIPE: see signalContext.)
	signal.Notify(pipeSignals, syscall.SIGPIPE)
	endOnQuit()
	stdout, stderr = newOutlet(stdout), newOutlet(stderr)
	app := newApp(stdout, stderr, e)
	err := app.RunContext(context.Background(), args)
	code := exitCode(err)
	if code != exitOK {
		report(stderr, err)
	}
	return code
}

// pipeSignals is where SIGPIPE is caught to be dropped (see run): never
// read, Notify drops what does not fit.
var pipeSignals = make(chan os.Signal, 1)

// quitSignals is where SIGQUIT comes while ralph runs (see endOnQuit).
var quitSignals = make(chan os.Signal, 1)

// quitStops counts the signalContexts that take SIGQUIT as a stop.
var quitStops atomic.Int32

var quitOnce sync.Once

// endOnQuit makes SIGQUIT (Ctrl-\) end ralph at once with exitQuit, as
// SIGINT and SIGTERM end it, while no signalContext takes it as a stop: the
// commands that do not stop on signals (see stopsOnSignal) end as any
// program ends on it, even while they wait for a lock. Left to Go, it
// would end them with a dump of ralph's goroutines and exit 2, which says
// bad input. It exits as the signal would kill ralph: no deferred call
// runs.
func endOnQuit() {
	quitOnce.Do(func() {
		signal.Notify(quitSignals, syscall.SIGQUIT)
		go func() {
			for range quitSignals {
				if quitStops.Load() == 0 {
					os.Exit(exitQuit)
				}
			}
		}()
	})
}

// printJSON writes v to w as every --json output of ralph is written: a
// whole document indented, an element of a stream on one line, and in
// neither HTML escaping (a title's "<" stays "<").
func printJSON(w io.Writer, v any, indent bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// stopsOnSignal runs action with a context that the first SIGINT, SIGTERM,
// SIGHUP or SIGQUIT cancels: the loop stops the agent gracefully (SIGINT to its
// process group, SIGKILL after a grace period), records the iteration as
// interrupted and exits 130. Every further signal kills the process group of
// every child at once: someone who asks twice (Ctrl-C, Ctrl-C) does not want
// to wait out the grace. The loop goes on as after the first (the entry is
// written, the exit code is 130); only the wait is cut short.
//
// Only the commands that watch their context and have something to finish
// (children to stop, a record to write) take the signals so. The others
// are ended by them at once, as any program is (SIGQUIT through
// endOnQuit): caught, a signal would only cancel a context they never look
// at, while they may wait where none reaches (a lock another process
// holds).
func stopsOnSignal(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		// A reader that stopped reading must not keep ralph from
		// stopping (see outlet).
		ctx, stop := signalContext(c.Context, func() {
			stopOutput(c.App.Writer)
			stopOutput(c.App.ErrWriter)
		}, c.App.Writer, c.App.ErrWriter)
		defer stop()
		c.Context = ctx
		return action(c)
	}
}

// signalContext returns a child of parent that the first signal cancels,
// as stopsOnSignal says, after calling first, and the function that stops
// taking signals. The reader of one of outs, ralph's outputs, gone (see
// readerLeft) stops ralph as a first signal does.
func signalContext(parent context.Context, first func(), outs ...io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 1)
	// A hangup or a Ctrl-C ralph was started ignoring stays ignored: under
	// nohup it outlives the terminal, and as a background job of a script
	// (which ignores Ctrl-C for it) it goes on when Ctrl-C stops the
	// script. (Go keeps only those two ignored as it starts: SIGTERM and
	// SIGQUIT always stop ralph.) Such a signal is caught and dropped rather than left
	// ignored, which the agent would inherit: the agent must still stop on
	// the SIGINT of ralph's own stop.
	dropped := make(chan os.Signal, 1) // never read: Notify drops what does not fit
	// SIGQUIT (Ctrl-\) is a stop as the others are: left to Go, it
	// would end ralph at once with a dump of its goroutines and exit 2,
	// which says bad input, with its iteration unrecorded and the agent
	// left running.
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		if signal.Ignored(sig) {
			signal.Notify(dropped, sig)
		} else {
			signal.Notify(sigs, sig)
		}
	}
	// SIGQUIT is a stop from here on, not the end of ralph (see
	// endOnQuit), until stop: one that comes between the two is the one
	// or the other, never neither.
	quitStops.Add(1)
	// A write into a pipe whose reader is gone (`ralph loop | head`) stops
	// ralph as a first signal does: the loop would otherwise go on with no
	// one to see it. It is the write's EPIPE (or a socket's ECONNRESET:
	// see peerGone) that says so, or a look while ralph writes nothing
	// (see readerLeft), not SIGPIPE: caught, SIGPIPE comes for a write
	// into any pipe, the agent's stdin included when the agent exits
	// without reading its prompt, which is the agent's business. The
	// reader's going is no second signal.
	done := make(chan struct{})
	pipes := make(chan struct{})
	for _, out := range outs {
		l := readerLeft(out, done)
		if l == nil {
			continue
		}
		go func() {
			select {
			case <-l:
			case <-done:
				return
			}
			select {
			case pipes <- struct{}{}:
			case <-done:
			}
		}()
	}
	go func() {
		for asked := 0; ; {
			select {
			case <-sigs:
			case <-pipes:
				if asked > 0 {
					continue
				}
			case <-done:
				return
			}
			if asked++; asked == 1 {
				first()
				cancel()
			} else {
				proc.KillAll()
			}
		}
	}()
	return ctx, func() {
		quitStops.Add(-1)
		signal.Stop(sigs)
		signal.Stop(dropped)
		close(done)
		cancel()
	}
}

func newApp(stdout, stderr io.Writer, e env) *cli.App {
	return &cli.App{
		Name:      "ralph",
		Usage:     "run a coding agent in a loop until the task list is done",
		Version:   version,
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "C", Usage: "work in `DIR` instead of the current directory"},
		},
		Commands: []*cli.Command{
			initCommand(),
			loopCommand(e),
			statusCommand(e),
			logCommand(),
			nextCommand(),
			taskCommand(),
			promptCommand(),
			checkCommand(e),
			validateCommand(),
			demoCommand(e),
			demoAgentCommand(),
			apiAgentCommand(e),
		},
		HideHelpCommand: true,
		// A repeated flag is one value each: criteria and checks hold commas.
		DisableSliceFlagSeparator: true,
		// Errors reach run, which alone decides the exit code.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
		Action: func(c *cli.Context) error {
			// `ralph help [command [subcommand]]` is `ralph [command
			// [subcommand]] --help`, with no help command in the list.
			args := c.Args().Slice()
			switch {
			case len(args) == 0 || len(args) == 1 && args[0] == "help":
				return cli.ShowAppHelp(c)
			case args[0] != "help":
				return usageErrorf("unknown command %q (run `ralph --help` for the list)", args[0])
			}
			cmd := c.App.Command(args[1])
			if cmd == nil {
				return usageErrorf("unknown command %q (run `ralph --help` for the list)", args[1])
			}
			path := cmd.Name // as typed up to here, for the messages
			for _, name := range args[2:] {
				i := slices.IndexFunc(cmd.Subcommands, func(sub *cli.Command) bool { return sub.HasName(name) })
				if i < 0 {
					if len(cmd.Subcommands) == 0 {
						return usageErrorf("unknown command %q (`ralph %s` has no subcommands)", path+" "+name, path)
					}
					return usageErrorf("unknown command %q (run `ralph %s --help` for the list)", path+" "+name, path)
				}
				cmd = cmd.Subcommands[i]
				path += " " + cmd.Name
			}
			// Every argument names a command: run them with --help.
			return c.App.RunContext(c.Context, append(append([]string{c.App.Name}, args[1:]...), "--help"))
		},
	}
}

// showHelp prints the help of c's command, one without subcommands of its
// own, as its --help does.
func showHelp(c *cli.Context) error {
	templ := c.Command.CustomHelpTemplate
	if templ == "" {
		templ = cli.CommandHelpTemplate
	}
	cli.HelpPrinter(c.App.Writer, templ, c.Command)
	return nil
}

// onUsageError makes a flag's error a usage error (exit 2), in ralph's
// words: the flag package names every flag with one dash and says "parse
// error" of any value it cannot read.
func onUsageError(c *cli.Context, err error, _ bool) error {
	return &usageError{err: flagError(c, err)}
}

// The flag package's messages (flag.FlagSet.parseOne), compiled when a
// flag is wrong, not at every start.
var (
	flagUnknown  = lazyre.New(`^flag provided but not defined: -+(.*)$`)
	flagNoValue  = lazyre.New(`^flag needs an argument: -+(.*)$`)
	flagBadValue = lazyre.New(`^invalid value (".*") for flag -+([^:]*): (.*)$`)
	flagBadBool  = lazyre.New(`^invalid boolean value (".*") for -+([^:]*): (.*)$`)
)

// flagError rewords err, when the flag package wrote it, naming the flag as
// it is typed (--max-iterations, -n) and saying what a bad value should be.
func flagError(c *cli.Context, err error) error {
	msg := err.Error()
	if m := flagUnknown().FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("unknown flag %s", dashed(m[1]))
	}
	if m := flagNoValue().FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("flag %s needs a value", dashed(m[1]))
	}
	if m := flagBadBool().FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("invalid value %s for %s: want true or false", m[1], dashed(m[2]))
	}
	m := flagBadValue().FindStringSubmatch(msg)
	if m == nil {
		return err
	}
	// The flag package says "parse error" of any value it cannot read,
	// and "value out of range" of a number too large: the latter stands.
	// A whole number's flag (decimalFlag) says what it wants itself.
	want := m[3]
	if c != nil && c.Command != nil && want == "parse error" {
		for _, f := range c.Command.Flags {
			if _, ok := f.(*cli.Float64Flag); ok && slices.Contains(f.Names(), m[2]) {
				want = "not a number"
			}
		}
	}
	return fmt.Errorf("invalid value %s for %s: %s", m[1], dashed(m[2]), want)
}

// decimalFlag is a whole number's flag read in decimal, as a person
// types one. cli.IntFlag leaves the command line to the flag package,
// which reads any base Go's source does: --priority 010 would be 8, 0x10
// 16, and 08 refused.
type decimalFlag struct {
	cli.IntFlag
}

// Apply registers the flag under each of its names, with one value, in
// place of cli.IntFlag's. The value reads back as decimal digits, which
// is all cli.Context.Int asks of it.
func (f *decimalFlag) Apply(set *flag.FlagSet) error {
	v := &decimal{n: f.Value}
	for _, name := range f.Names() {
		set.Var(v, name, f.Usage)
	}
	return nil
}

// decimal is decimalFlag's value.
type decimal struct{ n int }

func (d *decimal) String() string { return strconv.Itoa(d.n) }

func (d *decimal) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, strconv.IntSize)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return errors.New("value out of range")
	case err != nil:
		return errors.New("not a whole number")
	}
	d.n = int(n)
	return nil
}

// dashed is a flag's name as typed: --name, or -n for a one-letter name.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// usageError is bad usage or bad input: exit 2, and nothing was changed.
type usageError struct {
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// exitCode maps an error to the exit code in one place.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var usage *usageError
	var input *loop.InputError
	var stopped *loop.StopError
	var cannotRun *agent.CannotRunError
	switch {
	case outputGone(err):
		// All that went wrong is that the reader of ralph's output went
		// away (`ralph status | head -1`): it has what it wanted. A
		// command whose exit status is a verdict (`ralph check`) returns
		// that instead.
		return exitOK
	case errors.As(err, &usage), errors.As(err, &input):
		return exitUsage
	case errors.As(err, &cannotRun):
		// harness.toml names a program that is there and cannot run: bad
		// input, where one to install is not.
		return exitUsage
	case errors.As(err, &stopped):
		switch stopped.Kind {
		case loop.LimitReached:
			return exitLimit
		case loop.NeedsHuman:
			return exitNeedsHuman
		case loop.InterruptedStop:
			return exitInterrupted
		case loop.Stalled:
			return exitStalled
		}
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, readbuf.ErrNotRegular), errors.Is(err, syscall.EISDIR):
		// A directory or a named pipe where ralph reads one of its files
		// is bad input, as a broken file is.
		return exitUsage
	}
	// errChecksFailed and errNothingNext among them.
	return exitRuntime
}

// report prints err, which is not nil, and any hint for it on stderr.
func report(stderr io.Writer, err error) {
	if errors.Is(err, errChecksFailed) || errors.Is(err, errNothingNext) {
		return // the command said it all
	}
	// An error may quote the agent's output, which may quote a key; a
	// reason, a question; a hint, a path.
	secrets := redact.New(os.Environ())
	var stopped *loop.StopError
	var apiAgent *apiAgentError
	switch {
	case errors.As(err, &stopped):
		fmt.Fprintf(stderr, "ralph: stopped: %s\n", secrets.String(stopped.Reason))
		return
	case errors.As(err, &apiAgent):
		fmt.Fprintf(stderr, "ralph api-agent: error: %s\n", secrets.String(err.Error()))
		return
	}
	fmt.Fprintf(stderr, "ralph: error: %s\n", secrets.String(err.Error()))
	var notFound *agent.NotFoundError
	var agentErr *loop.AgentError
	switch {
	case errors.As(err, &agentErr) && strings.Contains(agentErr.Problem.Message, "cannot be used with root"):
		fmt.Fprintf(stderr, "ralph: hint: claude will not skip its permission prompts as root: run ralph as another user, or, only inside a sandbox, set agent.env = { IS_SANDBOX = \"1\" } in %s\n", harnessFile)
	case errors.As(err, &agentErr) && agentErr.Problem.Kind == agent.Permanent:
		fmt.Fprintf(stderr, "ralph: hint: check the agent's key, model and flags in [agent] of %s (env or api_key_env, args or model, preset, command or base_url); the ledger in %s has the details\n", harnessFile, progressFile)
	case errors.As(err, &agentErr):
		fmt.Fprintf(stderr, "ralph: hint: the agent's service kept failing; run `ralph loop` again later, or raise agent.max_retries in %s\n", harnessFile)
	case errors.As(err, &notFound):
		fmt.Fprintf(stderr, "ralph: hint: install %s, or set agent.command (or agent.preset) in %s to an agent on your PATH\n", secrets.String(notFound.Program), harnessFile)
	case errors.Is(err, loop.ErrLocked):
		fmt.Fprintf(stderr, "ralph: hint: wait for it to finish, or stop it (Ctrl-C) first\n")
	}
}

// workDir returns the directory named by -C, or the current one.
func workDir(c *cli.Context) (string, error) {
	dir := c.String("C")
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return "", usageErrorf("-C %s: %w", dir, err)
	}
	if !info.IsDir() {
		return "", usageErrorf("-C %s: not a directory", dir)
	}
	return abs, nil
}

// inDir adapts an action that works in the -C directory and takes no
// arguments.
func inDir(action func(c *cli.Context, dir string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		if err := noArgs(c); err != nil {
			return err
		}
		dir, err := workDir(c)
		if err != nil {
			return err
		}
		return action(c, dir)
	}
}

// withHarness is inDir for the actions that also need harness.toml. When
// it cannot be used, the other files' problems are told with its own (see
// loadHarness): every problem at once.
func withHarness(action func(c *cli.Context, dir string, cfg loop.Config) error) cli.ActionFunc {
	return inDir(func(c *cli.Context, dir string) error {
		cfg, err := loadHarness(dir)
		if err != nil {
			_, err = inputProblems(dir, cfg, err)
			return err
		}
		return action(c, dir, cfg)
	})
}

// noArgs rejects stray arguments: a command given words it ignores is likely
// not doing what the user meant.
func noArgs(c *cli.Context) error {
	if c.Args().Present() {
		// HelpName is "ralph task add" for a subcommand: name it whole.
		name := strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
		if name == "" {
			name = c.Command.Name
		}
		return usageErrorf("%s: unexpected argument %q", name, c.Args().First())
	}
	return nil
}
