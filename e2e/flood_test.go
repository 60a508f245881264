package e2e

import (
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// An agent that prints 1 GB in one iteration, as lines or as one line with
// no newline, leaves ralph's memory bounded: output is streamed, never held
// whole. (The figures against the 30 MB target are in BENCHMARKS.md; this
// is the guard against a regression that would hold the output.)
func TestFloodMemory(t *testing.T) {
	for _, tt := range []struct{ name, agent string }{
		{"lines", `yes 'flooding the terminal with output' | head -c 1000000000`},
		{"one line", `head -c 1000000000 /dev/zero | tr '\0' x`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{
				"agent.sh":     "cat >/dev/null\n" + tt.agent + "\necho\necho '<ralph>done</ralph>'\n",
				"harness.toml": "[agent]\ncommand = [\"sh\", \"agent.sh\"]\ntimeout = \"2m\"\n\n[[checks]]\nname = \"ok\"\nrun = \"true\"\n",
				"prd.json":     `{"userStories": [{"id": "US-001", "title": "Flood", "priority": 1, "passes": false}]}`,
				"progress.txt": "",
			})
			cmd := exec.Command(ralphBin, "loop")
			cmd.Dir = dir
			cmd.Stdout = io.Discard
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("ralph loop: %v\n%s", err, stderr.String())
			}
			if !strings.Contains(readFile(t, dir+"/progress.txt"), "· US-001 · done ===") {
				t.Errorf("the claim after 1 GB of output was not read:\n%s", readFile(t, dir+"/progress.txt"))
			}
			maxRSS := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
			if maxRSS > 64<<10 {
				t.Errorf("peak RSS %d KiB after 1 GB of output: the output is being held", maxRSS)
			}
			t.Logf("peak RSS %d KiB", maxRSS)
		})
	}
}
