package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/internal/demo"
	"github.com/ralph-harness/ralph/internal/sticky"
	"github.com/ralph-harness/ralph/loop"
)

func demoCommand(e env) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "watch ralph run a scripted agent on a sample project in a temporary directory",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "use `DIR` (new or empty) instead of a fresh temporary directory"},
		},
		OnUsageError: onUsageError,
		Action: stopsOnSignal(func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			dir, err := demoDir(c.String("dir"))
			if err != nil {
				return err
			}
			self, err := selfPath()
			if err != nil {
				return err
			}
			if err := demo.Write(dir); err != nil {
				return fmt.Errorf("write the demo project: %w", err)
			}
			harness := demo.Harness([]string{self, "demo-agent"})
			if err := os.WriteFile(filepath.Join(dir, harnessFile), []byte(harness), 0o644); err != nil {
				return err
			}
			cfg, err := parseHarness([]byte(harness), harnessFile)
			if err != nil {
				return err
			}
			gitNote := demoGit(c.Context, dir)
			w := &sticky.Writer{W: c.App.Writer}
			fmt.Fprintf(w, `ralph demo: a scripted agent builds a tiny shell greeter in %s
It gets the first story wrong and claims done anyway: watch the judge refuse,
feed the failing check into the next prompt, and the agent fix it.%s

`, dir, gitNote)
			err = loop.Run(c.Context, loop.Options{
				Dir:    dir,
				Config: cfg,
				Out:    w,
				Err:    c.App.ErrWriter,
				Now:    e.now,
			})
			fmt.Fprintf(w, `
The demo's files are in %s:
  prd.json      the stories, with the status ralph wrote
  progress.txt  the ledger: one entry per iteration
  harness.toml  how the loop ran
Try: ralph -C %s status
`, dir, dir)
			if outputGone(w.Err()) {
				// No one watches the demo any more (`ralph demo | head`),
				// which stopped it: it ends quietly, as a command whose
				// reader went away does, not with a hint to resume.
				return w.Err()
			}
			return err
		}),
	}
}

// demoDir makes the directory the demo runs in.
func demoDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "ralph-demo-")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	if len(entries) > 0 {
		return "", usageErrorf("--dir %s: not empty; the demo writes its own files there", dir)
	}
	return filepath.Abs(dir)
}

// selfPath is how the demo's harness starts ralph again as the scripted
// agent: the program as it was invoked, so that a renamed or wrapped binary
// works too.
func selfPath() (string, error) {
	name := os.Args[0]
	if !strings.Contains(name, "/") {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		return os.Executable()
	}
	return filepath.Abs(name)
}

// demoGit makes the demo directory a git repository when git is installed,
// so that the loop's commits show too.
func demoGit(ctx context.Context, dir string) string {
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		return cmd.Run()
	}
	if err := run("init", "--quiet"); err != nil {
		return ""
	}
	for _, kv := range [][2]string{
		{"user.name", "ralph demo"}, {"user.email", "demo@ralph.invalid"}, {"commit.gpgsign", "false"},
	} {
		if err := run("config", kv[0], kv[1]); err != nil {
			return ""
		}
	}
	if run("add", "--all") != nil || run("commit", "--quiet", "-m", "demo: the sample project") != nil {
		return ""
	}
	return "\nIt is a git repository: ralph commits after every iteration."
}

// demoAgentCommand is the scripted agent the demo's harness runs.
func demoAgentCommand() *cli.Command {
	return &cli.Command{
		Name:   "demo-agent",
		Hidden: true,
		Action: func(c *cli.Context) error {
			if code := demo.Agent(os.Stdin, c.App.Writer); code != 0 {
				return fmt.Errorf("demo agent failed")
			}
			return nil
		},
	}
}
