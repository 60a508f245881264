package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/internal/fakemodel"
)

// codexConfig is Codex's config.toml for the tests: its API is the fake
// server's Responses API with a fake key, a model it knows (so that it
// asks for no model metadata), few retries of its own, and everything off
// that would reach out: plugins and their sync from GitHub, apps,
// connectors, browser and computer use, web search, the update check,
// analytics, feedback and OpenTelemetry.
const codexConfig = `model = "gpt-5.5"
model_provider = "fakemodel"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.fakemodel]
name = "fakemodel"
base_url = "%s/v1"
wire_api = "responses"
env_key = "CODEX_E2E_API_KEY"
request_max_retries = 2
stream_max_retries = 2

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
browser_use = false
browser_use_external = false
computer_use = false
image_generation = false
goals = false
tool_suggest = false
skill_mcp_dependency_install = false
daemon_auto_start = false
in_app_updates = false
api_key_model_discovery = false
unbounded_connection_retries = false
shell_snapshot = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[agents]
enabled = false
`

// codexRequests is how many requests one codex run makes for a step whose
// every answer is a 429 before it gives up: the first, then
// stream_max_retries more.
const codexRequests = 1 + 2

// codexEnv is the isolated environment of codex: its CODEX_HOME (with the
// config above) inside the fresh HOME, and the fake key.
func codexEnv(t *testing.T, s *fakemodel.Server) []string {
	t.Helper()
	env := isolatedEnv(t, s, "CODEX_E2E_API_KEY=sk-fake-codex-e2e")
	var home string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(fmt.Sprintf(codexConfig, s.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	return append(env, "CODEX_HOME="+codexHome)
}

// codexHarness is harness.toml for the codex preset with the installed
// binary. --strict-config makes codex refuse a config key it does not
// know, so that a setting above cannot silently stop switching something
// off.
func codexHarness(bin string) string {
	return fmt.Sprintf(`[agent]
preset = "codex"
command = [%q]
args = ["--strict-config"]
timeout = "60s"
idle_timeout = "30s"
retry_backoff = "1s"

[[checks]]
name = "hello"
run = "test \"$(cat hello.txt)\" = hello"
timeout = "10s"

[git]
commit = false
`, bin)
}

// codexPRD has two stories; each description holds a word that only its
// own prompts contain, which selects its conversation on the fake server
// (ids and titles also reach later prompts through the ledger).
const codexPRD = `{
  "project": "Codex e2e",
  "userStories": [
    {
      "id": "US-001",
      "title": "Greeting",
      "description": "Write hello.txt (codex-story-greeting).",
      "priority": 1,
      "passes": false
    },
    {
      "id": "US-002",
      "title": "Farewell",
      "description": "Write bye.txt (codex-story-farewell).",
      "priority": 2,
      "passes": false,
      "checks": ["test \"$(cat bye.txt)\" = bye", "test -f listing.txt"]
    }
  ]
}
`

// TestCodexLoop: ralph drives the real codex through two stories. Codex
// writes the files with its own tools (a shell command through
// exec_command, a new file through apply_patch), the checks pass only when
// the files are right, and the ledger holds each iteration's tokens.
func TestCodexLoop(t *testing.T) {
	bin := findCLI(t, "codex", "codex")
	if inNetns(t) {
		return
	}
	s := startServer(t,
		fakemodel.Conversation{
			Match: "codex-story-greeting",
			Steps: []fakemodel.Step{
				{Tool: fakemodel.Shell("exec_command", "echo hello > hello.txt")},
				{Text: "Wrote hello.txt.\nLearning: codex writes files with exec_command\n<ralph>done</ralph>"},
			},
		},
		fakemodel.Conversation{
			Match: "codex-story-farewell",
			Steps: []fakemodel.Step{
				{Tool: &fakemodel.ToolCall{Name: "apply_patch", Input: map[string]any{
					"input": "*** Begin Patch\n*** Add File: bye.txt\n+bye\n*** End Patch\n",
				}}},
				{Tool: fakemodel.Shell("exec_command", "ls > listing.txt")},
				{Text: "Wrote bye.txt with apply_patch.\n<ralph>done</ralph>"},
			},
		},
	)
	dir := writeFiles(t, map[string]string{
		"harness.toml": codexHarness(bin),
		"prd.json":     codexPRD,
		"progress.txt": "## Codebase Patterns\n",
	})
	stdout, stderr, code := runRalph(t, dir, codexEnv(t, s), "loop")
	if code != 0 {
		t.Fatalf("ralph loop exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if got := readFile(t, filepath.Join(dir, "hello.txt")); got != "hello\n" {
		t.Errorf("hello.txt = %q, want %q", got, "hello\n")
	}
	if got := readFile(t, filepath.Join(dir, "bye.txt")); got != "bye\n" {
		t.Errorf("bye.txt = %q, want %q", got, "bye\n")
	}
	// The view shows codex's actions, not its JSON.
	for _, want := range []string{"→ shell: echo hello > hello.txt", "→ edit: add ", "✓ turn completed: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, `"type":`) {
		t.Errorf("stdout shows raw JSON:\n%s", stdout)
	}
	progress := readFile(t, filepath.Join(dir, "progress.txt"))
	for _, want := range []string{
		"=== ralph iteration 1 · US-001 · done ===",
		// Two requests (the tool call, then the final text) of 100 input
		// and 20 output tokens each.
		"usage: 200 input tokens · 40 output tokens",
		"learning: codex writes files with exec_command",
		"=== ralph iteration 2 · US-002 · done ===",
		"usage: 300 input tokens · 60 output tokens",
		"totals: iterations 2 · tokens 600",
	} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress.txt lacks %q:\n%s", want, progress)
		}
	}
	if n := strings.Count(progress, "\nusage: "); n != 2 {
		t.Errorf("progress.txt has %d usage lines, want one per iteration (2):\n%s", n, progress)
	}
	if prd := readFile(t, filepath.Join(dir, "prd.json")); strings.Count(prd, `"passes": true`) != 2 {
		t.Errorf("prd.json: want both stories passing:\n%s", prd)
	}
}

// TestCodexRateLimit: every answer codex gets in its first run is a 429,
// until its own retries give up and it reports the rate limit; ralph waits
// (retry_backoff) and runs the iteration again, which is not an attempt,
// and the second run succeeds.
func TestCodexRateLimit(t *testing.T) {
	bin := findCLI(t, "codex", "codex")
	if inNetns(t) {
		return
	}
	faults := make([]fakemodel.Fault, codexRequests)
	for i := range faults {
		faults[i] = fakemodel.Fault{Status: 429}
	}
	s := startServer(t, fakemodel.Conversation{
		Match: "codex-story-greeting",
		Steps: []fakemodel.Step{
			{Tool: fakemodel.Shell("exec_command", "echo hello > hello.txt")},
			{Text: "Wrote hello.txt.\n<ralph>done</ralph>"},
		},
		Faults: map[int][]fakemodel.Fault{0: faults},
	})
	prd := `{"project": "Codex e2e", "userStories": [{"id": "US-001", "title": "Greeting", "description": "Write hello.txt (codex-story-greeting).", "priority": 1, "passes": false}]}`
	dir := writeFiles(t, map[string]string{
		"harness.toml": codexHarness(bin),
		"prd.json":     prd,
		"progress.txt": "## Codebase Patterns\n",
	})
	stdout, stderr, code := runRalph(t, dir, codexEnv(t, s), "loop")
	if code != 0 {
		t.Fatalf("ralph loop exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if n := strings.Count(strings.Join(s.Log(), "\n"), "fault 429"); n != codexRequests {
		t.Errorf("the server served %d 429s, want %d:\n%s", n, codexRequests, strings.Join(s.Log(), "\n"))
	}
	if !strings.Contains(stderr, "ralph: waiting for the rate limit to pass") {
		t.Errorf("stderr does not say ralph waited for the rate limit:\n%s", stderr)
	}
	progress := readFile(t, filepath.Join(dir, "progress.txt"))
	for _, want := range []string{
		"=== ralph iteration 1 · US-001 · rate-limited ===",
		"429 Too Many Requests",
		"=== ralph iteration 2 · US-001 · done ===",
		"usage: 200 input tokens · 40 output tokens",
	} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress.txt lacks %q:\n%s", want, progress)
		}
	}
	if got := readFile(t, filepath.Join(dir, "prd.json")); !strings.Contains(got, `"attempts": 1`) {
		t.Errorf("prd.json: want one attempt (the rate-limited run is not one):\n%s", got)
	}
}
