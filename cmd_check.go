package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/checks"
	"github.com/ralph-harness/ralph/internal/plural"
	"github.com/ralph-harness/ralph/internal/sticky"
	"github.com/ralph-harness/ralph/loop"
)

// errChecksFailed makes `ralph check` exit 1 after its summary said why.
var errChecksFailed = errors.New("checks failed")

func checkCommand(e env) *cli.Command {
	return &cli.Command{
		Name:  "check",
		Usage: "run the checks now and print a summary; exit 0 only if all required ones pass",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "story", Usage: "also run the checks of story `ID` from prd.json"},
		},
		OnUsageError: onUsageError,
		Action: stopsOnSignal(withHarness(func(c *cli.Context, dir string, cfg loop.Config) error {
			o := loop.Options{Dir: dir, Config: cfg, Err: c.App.ErrWriter, Quiet: true, Now: e.now}
			results, err := loop.Checks(c.Context, o, c.String("story"))
			if c.Context.Err() != nil {
				// The checks were stopped, not failed: no verdict to print.
				return &loop.StopError{Kind: loop.InterruptedStop, Reason: "interrupted: the checks were stopped before they ended"}
			}
			if err != nil {
				return err
			}
			if len(results) == 0 {
				fmt.Fprintf(c.App.ErrWriter, "ralph: no checks configured: add [[checks]] to %s\n", harnessFile)
				return nil
			}
			return printChecks(c, results, o.Redact)
		})),
	}
}

// printChecks prints the checks' results. The outputs were redacted as
// they were kept; a command or an error may hold a key too, which redact
// takes out: the keys the loop keeps out of what it writes (those of
// agent.env and api_key_env as well as the environment's).
func printChecks(c *cli.Context, results []checks.Result, redact func(string) string) error {
	w := &sticky.Writer{W: c.App.Writer}
	failed := 0
	for _, r := range results {
		verdict := "PASS"
		switch {
		case !r.Passed && !r.Required:
			verdict = "FAIL (optional)"
		case !r.Passed:
			verdict = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "%-4s  %s  (%s)  %s\n", verdict, r.Name, r.Duration.Round(100*time.Millisecond), redact(r.Run))
		if r.Passed {
			continue
		}
		excerpt := r.Excerpt(20)
		if r.Err != nil {
			excerpt = redact(r.Err.Error())
		}
		if r.TimedOut {
			excerpt = strings.TrimSpace(excerpt + "\n(timed out after " + r.Timeout.String() + ")")
		}
		for _, line := range strings.Split(excerpt, "\n") {
			fmt.Fprintf(w, "      | %s\n", line)
		}
	}
	fmt.Fprintf(w, "%s, %d required failing\n", plural.Of(len(results), "1 check run", "%d checks run"), failed)
	switch {
	case failed > 0 && outputGone(w.Err()):
		// The exit status is the verdict, read or not
		// (`ralph check | grep -q FAIL`).
		return errChecksFailed
	case w.Err() != nil:
		return w.Err()
	case failed > 0:
		return errChecksFailed
	}
	return nil
}
