package main

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/loop"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:         "validate",
		Usage:        "check harness.toml, prd.json and progress.txt and report every problem at once",
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			dir, err := workDir(c)
			if err != nil {
				return err
			}
			cfg, harnessErr := loadHarness(dir)
			v, err := loop.Validate(loop.Options{Dir: dir, Config: cfg})
			if harnessErr != nil {
				return &usageError{err: errors.Join(harnessErr, err)}
			}
			for _, w := range v.Warnings {
				fmt.Fprintf(c.App.ErrWriter, "ralph: warning: %s\n", w)
			}
			if len(cfg.Agent.Argv) > 0 {
				program := cfg.Agent.Argv[0]
				if strings.Contains(program, "/") && !filepath.IsAbs(program) {
					program = filepath.Join(dir, program)
				}
				if _, err := exec.LookPath(program); err != nil {
					fmt.Fprintf(c.App.ErrWriter, "ralph: warning: agent program %q not found: `ralph loop` will fail until it is installed\n", cfg.Agent.Argv[0])
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "ok: %s, %s (%d stories), %s (%d ledger entries)\n", harnessFile, prdFile, v.Stories, progressFile, v.Entries)
			return nil
		},
	}
}
