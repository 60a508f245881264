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
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			dir, err := workDir(c)
			if err != nil {
				return err
			}
			cfg, err := loadHarness(dir)
			if err != nil {
				return err
			}
			return printPrompt(c, loop.Options{Dir: dir, Config: cfg})
		},
	}
}
