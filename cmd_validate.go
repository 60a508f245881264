package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/ralph-harness/ralph/internal/plural"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/agent"
	"github.com/ralph-harness/ralph/loop"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:         "validate",
		Usage:        "check harness.toml, prd.json and progress.txt and report every problem at once",
		OnUsageError: onUsageError,
		Action: inDir(func(c *cli.Context, dir string) error {
			cfg, err := loadHarness(dir)
			v, err := inputProblems(dir, cfg, err)
			for _, w := range v.Warnings {
				fmt.Fprintf(c.App.ErrWriter, "ralph: warning: %s\n", w)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.App.Writer, "ok: %s, %s (%s), %s (%s)\n", harnessFile, prdFile, plural.Of(v.Stories, "1 story", "%d stories"),
				progressFile, plural.Of(v.Entries, "1 ledger entry", "%d ledger entries"))
			return err
		}),
	}
}

// inputProblems finds every problem of the three files in dir, and of the
// agent program they name when it is there and cannot run; and its
// warnings (a program to install, a key to set). cfg and harnessErr are
// what loadHarness returned: with a problem in harness.toml, what could be
// read of it serves to find the others', and there are no warnings: they
// would be of settings not all there.
func inputProblems(dir string, cfg loop.Config, harnessErr error) (loop.Validation, error) {
	v, err := loop.Validate(loop.Options{Dir: dir, Config: cfg})
	err = errors.Join(harnessErr, err)
	if len(cfg.Agent.Argv) > 0 {
		// A program to install may be there where the loop runs; one
		// that is there and cannot run is harness.toml's problem, as it
		// is for `ralph loop`.
		var notFound *agent.NotFoundError
		switch findErr := agent.Find(cfg.Agent.Argv[0], dir); {
		case errors.As(findErr, &notFound):
			v.Warnings = append(v.Warnings, fmt.Sprintf("%v: `ralph loop` will fail until it is installed", findErr))
		case findErr != nil:
			err = errors.Join(err, findErr)
		}
		// As for a program to install: the key may be set where the
		// loop runs.
		if keyErr := cfg.Agent.KeyError(os.Environ()); keyErr != nil {
			v.Warnings = append(v.Warnings, fmt.Sprintf("%v: `ralph loop` will fail until it is set", keyErr))
		}
	}
	if harnessErr != nil {
		v.Warnings = nil
	}
	return v, err
}
