package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ralph-harness/ralph/agent"
	"github.com/ralph-harness/ralph/internal/lazyre"
	"github.com/ralph-harness/ralph/internal/sticky"
	"github.com/ralph-harness/ralph/prd"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "write a commented harness.toml, an example prd.json and a progress.txt; never overwrites",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "preset", Value: "claude", Usage: "the agent preset to write into harness.toml: " + strings.Join(agent.PresetNames(), ", ")},
		},
		OnUsageError: onUsageError,
		Action: inDir(func(c *cli.Context, dir string) error {
			preset := c.String("preset")
			if _, ok := agent.LookupPreset(preset); !ok {
				return usageErrorf("--preset %q: unknown preset (known: %s)", preset, strings.Join(agent.PresetNames(), ", "))
			}
			detected := guessChecks(dir)
			harness := harnessFor(preset, detected)
			if _, err := parseHarness([]byte(harness), harnessFile); err != nil {
				// Not the user's doing: nothing they pass makes it.
				return fmt.Errorf("the harness.toml ralph writes for --preset %s is not valid, a bug in ralph (nothing was written): %w", preset, err)
			}
			files := []struct{ name, text, note string }{
				{harnessFile, harness, checksNote(detected)},
				{prdFile, examplePRD(filepath.Base(dir)), "an example story: replace it with yours"},
				{progressFile, progressHead, "the head: write what every iteration should know"},
			}
			// Something else in a file's place is bad input: nothing is
			// written, so that init never leaves half a project behind.
			var notFiles []error
			for _, f := range files {
				if err := notFile(filepath.Join(dir, f.name), f.name); err != nil {
					notFiles = append(notFiles, err)
				}
			}
			if len(notFiles) > 0 {
				return &usageError{err: errors.Join(notFiles...)}
			}
			w := &sticky.Writer{W: c.App.Writer}
			for _, f := range files {
				created, err := createNew(filepath.Join(dir, f.name), f.text)
				if err != nil {
					return err
				}
				if created {
					fmt.Fprintf(w, "created %s (%s)\n", f.name, f.note)
				} else {
					fmt.Fprintf(w, "kept %s: it exists\n", f.name)
				}
			}
			fmt.Fprintf(w, "next: edit prd.json, then run `ralph validate` and `ralph loop`\n")
			return w.Err()
		}),
	}
}

// notFile says why init can neither keep nor create the file name at
// path: something else than a file is in its place, or a link that leads
// to no file (its target missing, or a loop of links). Kept, such a link
// would be reported as a file that exists, and every command after would
// find none; created through, init would write where the link points,
// which may be anywhere. nil when there is a file, or nothing at all.
func notFile(path, name string) error {
	info, err := os.Stat(path)
	if err == nil {
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is %s, not a file: move it away and run `ralph init` again", name, kindOf(info.Mode()))
		}
		return nil
	}
	target, lerr := os.Readlink(path)
	if lerr != nil {
		return nil // nothing there, or not a link: createNew creates it, or says why not
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s is a link to %q, which does not exist: remove the link, or put a file where it points, and run `ralph init` again", name, target)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s is a link to %q, which leads to no file (%v): remove the link and run `ralph init` again", name, target, err)
}

// createNew writes a file that must not exist yet; it reports false when
// one does, leaving it untouched.
func createNew(path, text string) (bool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		os.Remove(path)
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}

// kindOf names what a file that is not a regular one is.
func kindOf(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// detectedCheck is a check guessed from a file the repository holds.
type detectedCheck struct {
	name, run string
}

// guessChecks looks at the repository's build files for its usual checks.
func guessChecks(dir string) []detectedCheck {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	var cs []detectedCheck
	if has("go.mod") {
		cs = append(cs, detectedCheck{"vet", "go vet ./..."}, detectedCheck{"test", "go test ./..."})
	}
	if has("package.json") && npmTests(filepath.Join(dir, "package.json")) {
		cs = append(cs, detectedCheck{"npm-test", "npm test"})
	}
	if has("Cargo.toml") {
		cs = append(cs, detectedCheck{"cargo-test", "cargo test"})
	}
	if has("pyproject.toml") || has("setup.py") || has("pytest.ini") {
		cs = append(cs, detectedCheck{"pytest", "python3 -m pytest -q"})
	}
	if has("Makefile") && len(cs) == 0 && makeTests(filepath.Join(dir, "Makefile")) {
		cs = append(cs, detectedCheck{"make-test", "make test"})
	}
	return cs
}

// makeTests reports whether the Makefile at path has a rule for the target
// test: make test fails without one, whatever the project.
func makeTests(path string) bool {
	data, err := os.ReadFile(path)
	return err == nil && makeTestRE().Match(data)
}

// makeTestRE is a rule's line that names the target test among its
// targets ("test:", "check test::"), not an assignment ("test := …") nor
// a recipe's line (which begins with a tab).
var makeTestRE = lazyre.New(`(?m)^(?:[^\t#:=\n]*\s)?test(?:\s[^#:=\n]*)?(?::[^:=\n]|::[^=\n]|::?$)`)

// npmTests reports whether the package.json at path has a test script
// that tests: not the one `npm init` writes, which only fails.
func npmTests(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return true // npm says what is wrong with it
	}
	test := pkg.Scripts["test"]
	return test != "" && !strings.Contains(test, "no test specified")
}

func checksNote(cs []detectedCheck) string {
	if len(cs) == 0 {
		return "no checks guessed: add yours under [[checks]]"
	}
	var runs []string
	for _, c := range cs {
		runs = append(runs, c.run)
	}
	return "checks: " + strings.Join(runs, ", ")
}

// costLine is harness.toml's loop.max_cost_usd for the preset: set where
// the agent reports its cost, and left as a comment where it cannot apply.
func costLine(preset string) string {
	if p, ok := agent.LookupPreset(preset); ok && !p.ReportsCost() {
		bound := "max_tokens"
		if !p.Format.ReportsTokens() {
			bound = "max_iterations"
		}
		return fmt.Sprintf("# max_cost_usd = 25.0         # %s reports no cost: bound the run with %s\n", preset, bound)
	}
	return "max_cost_usd = 25.0           # where the agent reports its cost\n"
}

// harnessFor is the harness.toml that init writes: harnessTemplate, which
// a test replaces with one that does not parse (ralph's own bug, not the
// user's).
var harnessFor = harnessTemplate

func harnessTemplate(preset string, cs []detectedCheck) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# harness.toml: how ralph runs the loop in this directory.

[agent]
preset = %q             # claude, codex, gemini, opencode, amp, cursor or copilot; or set command = ["my-agent", "--yes"] instead
# args = ["--model", "opus"]  # extra arguments after the preset's own
# prompt = "stdin"            # stdin | arg: how the prompt reaches the agent
timeout = "30m"               # hard limit for one iteration's agent run
idle_timeout = "10m"          # no output for this long: the agent is stopped
# env = { FOO = "bar" }       # added to the agent's environment

[loop]
max_iterations = 100          # over the whole run, as counted in progress.txt
max_attempts = 5              # per story; then the story is failed
max_duration = "8h"           # agent and check time over the whole run
%smax_tokens = 0                # 0: no limit

# ralph runs these itself after every iteration (with sh -c, in this
# directory, all at once): a story is done only when the agent claims it
# AND they pass. A check that runs what another builds waits for it with
# after = ["build"].
`, preset, costLine(preset))
	if len(cs) == 0 {
		b.WriteString(`# [[checks]]
# name = "test"
# run = "make test"
# timeout = "10m"

`)
	}
	for _, c := range cs {
		fmt.Fprintf(&b, "[[checks]]\nname = %q\nrun = %q\ntimeout = \"10m\"\n\n", c.name, c.run)
	}
	b.WriteString(`[git]
commit = true                 # commit after every iteration (inside a git work tree)

# [guard]
# protect = ["migrations/**"] # files the agent may not create, change or delete
# tests = ["**/*_test.go"]    # test files the agent may add but not delete (default: the usual languages')

# [prompt]
# template = "prompt.tmpl"    # your own prompt template instead of the built-in one
`)
	return b.String()
}

// examplePRD is the prd.json init writes, with the project named after its
// directory: its name as a line of plain text (see prd.PlainLine), which
// prd.json asks of a project's name, JSON-quoted.
func examplePRD(dirName string) string {
	name := prd.PlainLine(dirName)
	if strings.TrimSpace(name) == "" {
		name = "my project"
	}
	var project strings.Builder
	enc := json.NewEncoder(&project)
	enc.SetEscapeHTML(false)
	enc.Encode(name)
	return fmt.Sprintf(`{
  "project": %s,
  "branchName": "ralph/first-feature",
  "description": "What this run should achieve",
  "userStories": [
    {
      "id": "US-001",
      "title": "Describe the first small task",
      "description": "As a user I want ... so that ...",
      "acceptanceCriteria": [
        "A concrete, checkable criterion",
        "The checks in harness.toml pass"
      ],
      "priority": 1,
      "passes": false,
      "notes": ""
    }
  ]
}
`, strings.TrimSuffix(project.String(), "\n"))
}

const progressHead = `# Progress

## Codebase Patterns
<!-- What every iteration should know: conventions, commands, pitfalls.
     ralph puts this head into every prompt and appends its ledger below. -->

`
