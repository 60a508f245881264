package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/internal/sticky"
	"github.com/ralph-harness/ralph/loop"
	"github.com/ralph-harness/ralph/progress"
)

func loopCommand(e env) *cli.Command {
	return &cli.Command{
		Name:  "loop",
		Usage: "run iterations until every story passes, a limit is reached, or a human is needed",
		Description: `Each iteration picks the next story in prd.json, gives a fresh agent a prompt
built from it and progress.txt, runs the checks in harness.toml, judges the
result, records it in prd.json and progress.txt, and commits (in a git work
tree, with git.commit). Stop it at any time; run it again to resume.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "once", Usage: "run one iteration, then stop"},
			&decimalFlag{cli.IntFlag{Name: "max-iterations", Usage: "run at most `N` iterations in this invocation (0: no bound of its own)"}},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the prompt of the next iteration and stop, touching nothing"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not show the agent's and the checks' output"},
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "when nothing can run, wait for prd.json or harness.toml to change instead of exiting"},
			&cli.BoolFlag{Name: "json", Usage: "print events as JSON lines on stdout (the agent's output goes to stderr)"},
			&cli.BoolFlag{Name: "accept-changes", Usage: "keep the files ralph guards as they are when an iteration a stopped ralph left unrecorded finds them changed"},
		},
		OnUsageError: func(c *cli.Context, err error, sub bool) error {
			err = onUsageError(c, err, sub)
			if jsonAsked(c) {
				stopped(c, e.now, err)
			}
			return err
		},
		Action: stopsOnSignal(func(c *cli.Context) error {
			err := loopAction(c, e)
			if c.Bool("json") {
				// Whatever stopped it, bad input included: a script reads
				// the exit code from the last line.
				stopped(c, e.now, err)
			}
			return err
		}),
	}
}

// jsonAsked reports whether the command line of `ralph loop` asked for
// --json, when its flags could not be parsed: what follows the command's
// name, up to "--", as the flag package reads a boolean flag.
func jsonAsked(c *cli.Context) bool {
	lineage := c.Lineage()
	if len(lineage) < 2 {
		return false
	}
	asked := false
	for _, a := range lineage[1].Args().Tail() {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "json" {
			continue
		}
		asked = true
		if hasValue {
			asked, _ = strconv.ParseBool(value)
		}
	}
	return asked
}

// loopAction runs `ralph loop`.
func loopAction(c *cli.Context, e env) error {
	return withHarness(func(c *cli.Context, dir string, cfg loop.Config) error {
		max := c.Int("max-iterations")
		if max < 0 {
			return usageErrorf("--max-iterations %d: must not be negative", max)
		}
		if c.Bool("once") {
			if max > 1 {
				return usageErrorf("--once and --max-iterations %d contradict each other", max)
			}
			max = 1
		}
		// The loop goes on when its output fails (the ledger has it
		// all), and says so at its end.
		out := &sticky.Writer{W: c.App.Writer}
		o := loop.Options{
			Dir:           dir,
			Config:        cfg,
			Out:           out,
			Err:           c.App.ErrWriter,
			Quiet:         c.Bool("quiet"),
			MaxIterations: max,
			Now:           e.now,
			Jitter:        e.jitter,
			JSON:          c.Bool("json"),
			Watch:         c.Bool("watch"),
			AcceptChanges: c.Bool("accept-changes"),
			Reload:        func() (loop.Config, error) { return loadHarness(dir) },
		}
		if c.Bool("dry-run") {
			if o.JSON {
				// The prompt is text: it would break the stream of
				// events, whose last line says how the loop ended.
				return usageErrorf("--dry-run prints the prompt, not events: leave out --json")
			}
			return printPrompt(c, o)
		}
		waiter()
		// On a terminal, a status line stays under the output; into a
		// pipe or a file, the lines are plain.
		if !o.JSON && fileOf(c.App.Writer) == os.Stdout && canDraw(os.Stdout) {
			view := newLiveView(c.App.Writer, terminalWidth(os.Stdout), os.Getenv("NO_COLOR") == "")
			defer view.close()
			o.Out, o.OnEvent = view.writer(o.Out), view.event
			// stderr goes through the view only when it is a terminal
			// too (the same one, in practice): into a file or a pipe,
			// it cannot disturb the screen.
			if fileOf(c.App.ErrWriter) == os.Stderr && canDraw(os.Stderr) {
				o.Err = view.writer(o.Err)
			}
		}
		err := loop.Run(c.Context, o)
		// A reader that went away stopped the loop (see stopsOnSignal):
		// the output was for it.
		if werr := out.Err(); werr != nil && !outputGone(werr) {
			if err == nil {
				// A script must not take lost output for a clean run.
				return fmt.Errorf("ralph's output could not be written: %w; the loop ran to its end, and %s has every iteration", werr, progressFile)
			}
			fmt.Fprintf(c.App.ErrWriter, "ralph: warning: ralph's output could not be written: %v\n", werr)
		}
		return err
	})(c)
}

// printPrompt prints the next iteration's prompt on stdout, or says on
// stderr why there is none.
func printPrompt(c *cli.Context, o loop.Options) error {
	prompt, err := loop.NextPrompt(o)
	if err != nil {
		return err
	}
	// An iteration with no entry yet gets one before the next starts,
	// which that one's prompt shows; this one cannot.
	switch m, _ := progress.InFlight(filepath.Join(o.Dir, progressFile)); {
	case m == nil:
	case m.Recorded():
		fmt.Fprintf(c.App.ErrWriter, "ralph: warning: iteration %d (%s) has no entry in %s yet (a loop runs it now, or ralph stopped during it): the prompt of iteration %d will also say how it ended\n",
			m.Iteration, m.StoryID, progressFile, m.Iteration+1)
	default:
		fmt.Fprintf(c.App.ErrWriter, "ralph: warning: iteration %d (%s) started its baseline checks (a loop runs them now, or ralph stopped during them)\n",
			m.Iteration, m.StoryID)
	}
	if prompt == "" {
		fmt.Fprintln(c.App.ErrWriter, "ralph: nothing to do: every story passes")
		return nil
	}
	_, err = fmt.Fprint(c.App.Writer, prompt)
	return err
}

// stopped prints the loop.stopped event that ends a --json stream, with the
// exit code ralph is about to return.
func stopped(c *cli.Context, now func() time.Time, err error) {
	if now == nil {
		now = time.Now
	}
	code := exitCode(err)
	reason := "every story passes"
	if err != nil {
		reason = err.Error()
	}
	printJSON(c.App.Writer, loop.Event{
		Event: loop.EventLoopStopped, Time: now().UTC(), ExitCode: &code, Reason: reason,
		Message: "stopped: " + reason,
	}, false)
}
