package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ralph-harness/ralph/internal/plural"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/loop"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show every story's state, attempts and last outcome, and the run's totals",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object, for scripts"},
		},
		OnUsageError: onUsageError,
		Action: inDir(func(c *cli.Context, dir string) error {
			r, err := loop.Status(dir)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return printStatus(c, r)
		}),
	}
}

func printStatus(c *cli.Context, r loop.StatusReport) error {
	w := c.App.Writer
	if r.Project != "" {
		fmt.Fprintf(w, "%s: ", r.Project)
	}
	fmt.Fprintf(w, "%d of %s", r.Passing, plural.Of(r.Total, "1 story passes", "%d stories pass"))
	if r.Next != "" {
		fmt.Fprintf(w, "; next: %s", r.Next)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STORY\tSTATE\tATTEMPTS\tLAST\tTITLE")
	var notes []string
	for _, s := range r.Stories {
		last := "-"
		if s.LastOutcome != "" {
			last = fmt.Sprintf("%s (#%d)", s.LastOutcome, s.LastIteration)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.ID, s.State, s.Attempts, last, s.Title)
		switch s.State {
		case "blocked":
			notes = append(notes, fmt.Sprintf("%s asks: %s", s.ID, s.Blocked))
		case "failed":
			notes = append(notes, fmt.Sprintf("%s failed: %s", s.ID, s.Failed))
		case "waiting":
			notes = append(notes, fmt.Sprintf("%s waits on %s", s.ID, strings.Join(s.DependsOn, ", ")))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
	t := r.Totals
	fmt.Fprintf(w, "\n%s · %d tokens · $%.4f · %s\n", plural.Of(t.Iterations, "1 iteration", "%d iterations"), t.Tokens, t.CostUSD,
		(time.Duration(t.ElapsedSeconds * float64(time.Second))).Round(time.Second))
	return nil
}
