package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/internal/plural"
	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/loop"
	"github.com/ralph-harness/ralph/progress"
)

// followInterval is how often `ralph log -f` looks for new entries.
const followInterval = 200 * time.Millisecond

// followLast is how many entries `ralph log -f` shows before the new ones
// when -n is not given, as tail -f does with lines.
const followLast = 10

func logCommand() *cli.Command {
	return &cli.Command{
		Name:  "log",
		Usage: "print the ledger in progress.txt, one line per iteration; -f follows it",
		Description: `Each ledger entry is shown on one line: iteration, time (UTC), story,
outcome, then the attempt, the failing checks, the question or the agent's
note, and the first line of its summary. --full prints the entries as
progress.txt has them; --json prints one JSON object per entry (JSON Lines).

-f keeps printing entries as the loop appends them, each once it is
complete, until interrupted (Ctrl-C ends it with exit 0) or until the reader
of its output is gone (| head -1 ends it with exit 0). It starts with the
last 10 entries; -n 0 shows only new ones.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing entries as they are appended, until interrupted"},
			&decimalFlag{cli.IntFlag{Name: "n", Usage: "print only the last `N` entries", DefaultText: "all; with -f, 10"}},
			&cli.BoolFlag{Name: "full", Usage: "print whole entries, as progress.txt has them"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per entry, one per line, for scripts"},
		},
		OnUsageError: onUsageError,
		Action: stopsOnSignal(inDir(func(c *cli.Context, dir string) error {
			if c.Bool("full") && c.Bool("json") {
				return usageErrorf("log: --full and --json contradict each other")
			}
			n := -1 // all
			if c.IsSet("n") {
				if n = c.Int("n"); n < 0 {
					return usageErrorf("log: -n %d: must not be negative", n)
				}
			} else if c.Bool("follow") {
				n = followLast
			}
			path := filepath.Join(dir, progressFile)
			if w := loop.LedgerConflict(dir); w != "" {
				fmt.Fprintf(c.App.ErrWriter, "ralph: warning: %s\n", w)
			}
			// Lines are written in blocks (-f writes each batch at once): a
			// long ledger is a million writes otherwise.
			out := bufio.NewWriter(c.App.Writer)
			print := entryPrinter(out, c.Bool("full"), c.Bool("json"))
			printed, after := 0, 0
			err := eachEntry(c.Context, path, n, func(e progress.Entry) error {
				printed, after = printed+1, e.Iteration
				return print(e)
			})
			if ferr := out.Flush(); err == nil {
				err = ferr
			}
			if errors.Is(err, context.Canceled) {
				// A signal, or the reader gone, before the ledger's end:
				// log ends as -f does, with exit 0.
				return nil
			}
			// A reader gone (`ralph log | head`) has what it wanted: exit 0
			// (see exitCode).
			if err != nil {
				return err
			}
			if !c.Bool("follow") {
				if printed == 0 && n != 0 && !c.Bool("json") {
					note := "no iterations in " + progressFile + " yet"
					if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
						note = "no " + progressFile + " in " + dir + " yet: `ralph loop` creates it"
					}
					fmt.Fprintf(c.App.ErrWriter, "ralph: %s\n", note)
				}
				return nil
			}
			if printed == 0 && n == 0 {
				last, err := progress.Tail(path, 1)
				if err != nil {
					return err
				}
				if len(last) > 0 {
					after = last[0].Iteration
				}
			}
			return follow(c, path, after, func(e progress.Entry) error {
				if err := print(e); err != nil {
					return err
				}
				return out.Flush()
			})
		})),
	}
}

// eachEntry calls fn for each of the last n complete entries of the ledger
// at path, or for all of them when n < 0, oldest first. All of them are
// read as they come, one at a time: a ledger of a million entries is
// printed in the memory of one, and its first lines come at once. Once ctx
// is done, it stops and returns ctx's error (see untilDone).
func eachEntry(ctx context.Context, path string, n int, fn func(progress.Entry) error) error {
	fn = untilDone(ctx, fn)
	if n >= 0 {
		entries, err := progress.TailContext(ctx, path, n)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}
	f, _, err := readbuf.OpenFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var printErr error
	_, _, err = progress.Scan(f, func(e progress.Entry) error {
		printErr = fn(e)
		return printErr
	})
	switch {
	case printErr != nil:
		return printErr
	case err != nil:
		return fmt.Errorf("read %s: %w", progressFile, err)
	}
	return nil
}

// untilDone returns fn, which returns ctx's error instead once ctx is
// done: a signal must not wait for the end of a long ledger, nor for the
// end of a pipe's worth of its entries.
func untilDone(ctx context.Context, fn func(progress.Entry) error) func(progress.Entry) error {
	return func(e progress.Entry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(e)
	}
}

// follow prints the entries appended to the ledger after iteration after,
// until the command is interrupted or the reader of its output is gone
// (`ralph log -f | head -1`): that is how it ends, so it is no error.
func follow(c *cli.Context, path string, after int, print func(progress.Entry) error) error {
	fl, err := progress.NewFollower(path, after)
	if err != nil {
		return err
	}
	// Without a new entry there is no write to fail: a reader gone ends
	// c.Context all the same (see signalContext's readerLeft), or ralph
	// would wait for the loop's next entry (forever, with no loop running)
	// to learn that it is gone.
	tick := time.NewTicker(followInterval)
	defer tick.Stop()
	print = untilDone(c.Context, print)
	for {
		if err := fl.Poll(print); errors.Is(err, context.Canceled) {
			return nil
		} else if err != nil {
			return err
		}
		select {
		case <-c.Context.Done():
			return nil
		case <-tick.C:
		}
	}
}

// entryPrinter returns what prints one entry in the chosen form.
func entryPrinter(w io.Writer, full, asJSON bool) func(progress.Entry) error {
	switch {
	case asJSON:
		return func(e progress.Entry) error { return printJSON(w, loop.ReportEntry(e), false) }
	case full:
		first := true
		return func(e progress.Entry) error {
			sep := "\n"
			if first {
				sep, first = "", false
			}
			_, err := fmt.Fprintf(w, "%s%s", sep, progress.Format(e))
			return err
		}
	}
	return func(e progress.Entry) error {
		_, err := fmt.Fprintln(w, entryLine(e))
		return err
	}
}

// maxLineSummary is how much of an entry's summary its one-line form shows.
const maxLineSummary = 100

// entryLine is the one-line form of a ledger entry: what happened, at a
// glance; --full and progress.txt have the rest.
func entryLine(e progress.Entry) string {
	when := "-"
	if !e.Time.IsZero() {
		when = e.Time.UTC().Format("2006-01-02 15:04:05")
	}
	var parts []string
	if e.Attempt > 0 {
		parts = append(parts, fmt.Sprintf("attempt %d", e.Attempt))
	}
	if e.Claim == "done" && e.Outcome != loop.Done {
		parts = append(parts, "claimed done")
	}
	// A known failure (the story's baseline had it) did not count against
	// the verdict, so it is not one of the checks that failed.
	var failed, known []string
	for _, c := range e.Checks {
		switch {
		case c.Passed || c.Skipped || c.Optional:
		case c.Known:
			known = append(known, c.Name)
		default:
			failed = append(failed, c.Name)
		}
	}
	if len(failed) > 0 {
		parts = append(parts, plural.Of(len(failed), "check ", "checks ")+strings.Join(failed, ", ")+" failed")
	}
	if len(known) > 0 {
		parts = append(parts, plural.Of(len(known), "check ", "checks ")+strings.Join(known, ", ")+" failed as in the baseline")
	}
	if len(e.Tampered) > 0 {
		parts = append(parts, "tampering undone")
	}
	if e.AgentNote != "" {
		parts = append(parts, firstLine(e.AgentNote, maxLineSummary))
	}
	if e.Question != "" {
		parts = append(parts, "asks: "+firstLine(e.Question, maxLineSummary))
	}
	if e.Summary != "" {
		parts = append(parts, firstLine(e.Summary, maxLineSummary))
	}
	return strings.TrimRight(fmt.Sprintf("%3d  %s  %-6s  %-11s  %s", e.Iteration, when, e.StoryID, e.Outcome, strings.Join(parts, " · ")), " ")
}

// firstLine returns the first line of s, cut to at most n characters.
func firstLine(s string, n int) string {
	s, _, cut := strings.Cut(s, "\n")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n-1])
		cut = true
	}
	if cut {
		s = strings.TrimRight(s, " ") + "…"
	}
	return s
}
