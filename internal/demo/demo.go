// Package demo holds ralph's demonstration: a tiny sample project and a
// scripted agent that works on it the way a real one might, mistakes
// included, so that a newcomer can watch the loop without installing an
// agent.
package demo

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

//go:embed project
var project embed.FS

// Harness returns the demo's harness.toml, running the scripted agent as
// agentArgv.
func Harness(agentArgv []string) string {
	quoted := make([]string, len(agentArgv))
	for i, a := range agentArgv {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return `# The demo's harness: a scripted agent instead of a real one.
[agent]
command = [` + strings.Join(quoted, ", ") + `]
timeout = "1m"
idle_timeout = "30s"

[loop]
max_iterations = 10
max_attempts = 3

# Every story must also pass its own checks from prd.json.
[[checks]]
name = "syntax"
run = "test ! -e greet.sh || sh -n greet.sh"
timeout = "10s"

# No [git]: ralph commits after every iteration where git is (the demo makes
# its directory a repository when git is installed), and says nothing where
# it is not.
`
}

// Write puts the sample project into dir.
func Write(dir string) error {
	return fs.WalkDir(project, "project", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("project", path)
		target := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := project.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

const (
	buggyGreeter = `#!/bin/sh
echo "Hello $1"
`
	greeter = `#!/bin/sh
echo "Hello, $1!"
`
	fullGreeter = `#!/bin/sh
if [ "$1" = "--bye" ]; then
	echo "Goodbye, $2!"
else
	echo "Hello, $1!"
fi
`
)

// Agent is the scripted agent: it reads its prompt on stdin and acts on the
// story named by RALPH_TASK_ID. It gets the first story wrong on purpose,
// claims done anyway, and fixes it once the next prompt shows the failing
// check.
func Agent(stdin io.Reader, stdout io.Writer) int {
	prompt, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintf(stdout, "demo agent: read prompt: %v\n", err)
		return 1
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(stdout, "  (demo agent) "+format+"\n", args...)
		time.Sleep(150 * time.Millisecond)
	}
	task, attempt := os.Getenv("RALPH_TASK_ID"), os.Getenv("RALPH_ATTEMPT")
	say("read a %d-byte prompt for %s, attempt %s", len(prompt), task, attempt)
	switch {
	case task == "US-001" && !strings.Contains(string(prompt), "What failed last time"):
		say("writing greet.sh")
		if err := os.WriteFile("greet.sh", []byte(buggyGreeter), 0o755); err != nil {
			return fail(stdout, err)
		}
		say("looks right to me")
		fmt.Fprint(stdout, "\nI wrote greet.sh, which greets the name it is given.\n<ralph>done</ralph>\n")
	case task == "US-001":
		say("the prompt says tests/hello.sh failed last time; the output shows the comma and the ! are missing")
		if err := os.WriteFile("greet.sh", []byte(greeter), 0o755); err != nil {
			return fail(stdout, err)
		}
		fmt.Fprint(stdout, "\nFixed the greeting's punctuation: it now prints \"Hello, NAME!\".\n"+
			"Learning: the checks compare output exactly, punctuation included\n<ralph>done</ralph>\n")
	case task == "US-002":
		say("adding --bye to greet.sh")
		if err := os.WriteFile("greet.sh", []byte(fullGreeter), 0o755); err != nil {
			return fail(stdout, err)
		}
		fmt.Fprint(stdout, "\nAdded --bye: `sh greet.sh --bye NAME` says goodbye.\n"+
			"Learning: greet.sh takes --bye as its first argument for farewells\n<ralph>done</ralph>\n")
	default:
		fmt.Fprintf(stdout, "I have no script for %s.\n", task)
	}
	return 0
}

func fail(w io.Writer, err error) int {
	fmt.Fprintf(w, "demo agent: %v\n", err)
	return 1
}
