package main

import (
	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/loop"
)

func promptCommand() *cli.Command {
	return &cli.Command{
		Name:         "prompt",
		Usage:        "print the prompt the next iteration would send (for `ralph prompt | some-agent`)",
		OnUsageError: onUsageError,
		Before:       brief,
		Action: withHarness(func(c *cli.Context, dir string, cfg loop.Config) error {
			return printPrompt(c, loop.Options{Dir: dir, Config: cfg})
		}),
	}
}
