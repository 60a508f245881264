package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ralph-harness/ralph/internal/plural"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/loop"
)

func statusCommand(e env) *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show every story's state, attempts and last outcome, and the run's totals",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object, for scripts"},
		},
		OnUsageError: onUsageError,
		Before:       brief,
		Action: inDir(func(c *cli.Context, dir string) error {
			o := previewOptions(dir)
			o.Now = e.now
			r, err := loop.Status(o)
			if err != nil {
				return err
			}
			for _, w := range r.Warnings {
				fmt.Fprintf(c.App.ErrWriter, "ralph: warning: %s\n", w)
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, r, true)
			}
			return printStatus(c, r)
		}),
	}
}

func printStatus(c *cli.Context, r loop.StatusReport) error {
	w := c.App.Writer
	var blocked, notes []string
	for _, s := range r.Stories {
		if s.State == "blocked" {
			blocked = append(blocked, s.ID)
		}
		if n := storyNote(s.ID, s.State, s.Blocked, s.Failed, s.WaitsOn); n != "" {
			notes = append(notes, n)
		}
	}
	now := ""
	if r.Running != nil {
		now = running(r.Running)
	}
	printSummary(w, r.Project, r.Passing, r.Total, now, r.Next, blocked)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STORY\tSTATE\tATTEMPTS\tLAST\tTITLE")
	for _, s := range r.Stories {
		last := "-"
		if s.LastOutcome != "" {
			last = fmt.Sprintf("%s (#%d)", s.LastOutcome, s.LastIteration)
		}
		state := s.State
		if r.Running != nil && s.ID == r.Running.Story {
			state = "running"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.ID, state, s.Attempts, last, s.Title)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printNotes(w, notes)
	t := r.Totals
	fmt.Fprintf(w, "\n%s · %d tokens · $%.4f · %s\n", plural.Of(t.Iterations, "1 iteration", "%d iterations"), t.Tokens, t.CostUSD,
		seconds(t.ElapsedSeconds))
	return nil
}

// running says what a running loop is doing, for the summary line in
// place of the next story: "running: US-001 (iteration 4, attempt 2, 1m5s)".
func running(r *loop.Running) string {
	what := fmt.Sprintf("attempt %d", r.Attempt)
	if r.Baseline {
		what = "baseline checks"
	}
	return fmt.Sprintf("running: %s (iteration %d, %s, %s)", r.Story, r.Iteration, what, seconds(r.ElapsedSeconds))
}

// seconds is a report's count of seconds as a duration to the second.
func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Second)
}

// printSummary prints the summary line of `ralph status` and `ralph task
// list`, with after the count now (what a running loop does) when set,
// else the next story's id when there is one ("next: US-001"), then, so
// that no open question is missed, the command that answers each blocked
// story, and a blank line.
func printSummary(w io.Writer, project string, passing, total int, now, next string, blocked []string) {
	if project != "" {
		fmt.Fprintf(w, "%s: ", project)
	}
	fmt.Fprintf(w, "%d of %s", passing, plural.Of(total, "1 story passes", "%d stories pass"))
	switch {
	case now != "":
		fmt.Fprintf(w, "; %s", now)
	case next != "":
		fmt.Fprintf(w, "; next: %s", next)
	}
	fmt.Fprintln(w)
	switch len(blocked) {
	case 0:
	case 1:
		fmt.Fprintf(w, "1 story needs an answer: ralph task answer %s \"…\"\n", blocked[0])
	default:
		fmt.Fprintf(w, "%d stories need an answer:\n", len(blocked))
		for _, id := range blocked {
			fmt.Fprintf(w, "  ralph task answer %s \"…\"\n", id)
		}
	}
	fmt.Fprintln(w)
}

// storyNote is the line under the table that says what a blocked, failed or
// waiting story needs; "" for the others.
func storyNote(id, state, blocked, failed string, waitsOn []string) string {
	switch state {
	case "blocked":
		return fmt.Sprintf("%s asks: %s", id, blocked)
	case "failed":
		return fmt.Sprintf("%s failed: %s", id, failed)
	case "waiting":
		return fmt.Sprintf("%s waits on %s", id, strings.Join(waitsOn, ", "))
	}
	return ""
}

func printNotes(w io.Writer, notes []string) {
	if len(notes) == 0 {
		return
	}
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}
