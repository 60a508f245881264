package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/loop"
)

// errNothingNext makes `ralph next` exit 1 after it said why on stderr.
var errNothingNext = errors.New("no story can run next")

func nextCommand() *cli.Command {
	return &cli.Command{
		Name:  "next",
		Usage: "print the story the next iteration would work on; exit 1 when there is none",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the story as a JSON object, for scripts"},
		},
		OnUsageError: onUsageError,
		Before:       brief,
		Action: inDir(func(c *cli.Context, dir string) error {
			r, err := loop.Next(previewOptions(dir))
			if err != nil {
				return err
			}
			if r.Story == nil {
				errw := c.App.ErrWriter
				if r.Done {
					fmt.Fprintln(errw, "ralph: nothing next: every story passes")
					return errNothingNext
				}
				fmt.Fprintf(errw, "ralph: nothing next: no story can run: %s\n", r.Reason)
				for _, s := range r.Blocked {
					fmt.Fprintf(errw, "ralph: hint: answer %s's question with `ralph task answer %s \"…\"`\n", s.ID, s.ID)
				}
				return errNothingNext
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, r.Story, true)
			}
			_, err = fmt.Fprintf(c.App.Writer, "%s %s\n", r.Story.ID, r.Story.Title)
			return err
		}),
	}
}
